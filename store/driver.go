package store

import (
	"context"
	"log/slog"
)

// Driver describes one database to a config loader (package config): the
// name the `store` section's `driver` key gives it, and the config the
// section decodes into. Each store package exports one (sqlite.Driver, …);
// the program lists the drivers it ships and hands them to the loader, so
// that the loader imports no store package.
type Driver interface {
	// Name is the value of `store.driver`: "sqlite".
	Name() string
	// NewConfig returns a pointer to a new, empty config. The loader
	// checks the section's keys against its yaml tags (plus driver, dsn
	// and migrate, which every store has) and decodes the section into it.
	NewConfig() DriverConfig
}

// DriverConfig is the `store` section's driver-specific part, decoded.
type DriverConfig interface {
	// Validate checks the DSN without connecting, and the driver's own
	// keys; its error starts with the key at fault ("dsn: …").
	Validate(dsn string) error
	// Open opens the store on dsn.
	Open(ctx context.Context, dsn string) (Store, error)
}

// DefaultDSNer is an optional DriverConfig: the DSN used when the section
// sets none (SQLite's herald.db). Without it the dsn key is required.
type DefaultDSNer interface {
	DefaultDSN() string
}

// FileDatabase is an optional DriverConfig for databases that live in one
// file: the file a DSN names, so that read-only commands can refuse a
// missing one before opening it would create it empty. Without it the
// loader checks nothing before opening (servers say themselves that a
// database is missing).
type FileDatabase interface {
	File(dsn string) string
}

// LogRouter is an optional Driver whose client library logs through a
// logger of its own (the Go MySQL driver's, vitess's under MySQL's
// binary-log reader): the program
// hands it its logger once at start, so that the library's lines follow the
// program's format and level. The library's logger is process-wide, so
// the last call wins.
type LogRouter interface {
	RouteLogs(l *slog.Logger)
}
