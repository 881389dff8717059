package mysql

import (
	"context"
	"fmt"
	"log/slog"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/heraldhq/herald/store"
)

// Driver describes the store driver "mysql" (MySQL or MariaDB) to Herald's config
// loader.
type Driver struct{}

// Name implements store.Driver.
func (Driver) Name() string { return "mysql" }

// NewConfig implements store.Driver.
func (Driver) NewConfig() store.DriverConfig { return &Config{} }

// RouteLogs implements store.LogRouter: the Go MySQL driver's complaints
// ("[mysql] … closing bad idle connection") are written to l at WARN
// instead of to stderr.
func (Driver) RouteLogs(l *slog.Logger) {
	_ = gomysql.SetLogger(slog.NewLogLogger(l.Handler(), slog.LevelWarn))
}

// Config is the mysql part of the `store` section: it has no keys beyond
// driver, dsn and migrate.
type Config struct{}

// Validate implements store.DriverConfig: the DSN parses.
func (*Config) Validate(dsn string) error {
	if err := ValidateDSN(dsn); err != nil {
		return fmt.Errorf("dsn: %w", err)
	}
	return nil
}

// Open implements store.DriverConfig. Its errors never repeat the DSN, so
// no password reaches a log.
func (*Config) Open(ctx context.Context, dsn string) (store.Store, error) {
	return Open(ctx, dsn, Options{})
}
