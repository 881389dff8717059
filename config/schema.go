package config

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/heraldhq/herald/store"
)

// NotMigratedError is returned when a command finds a database or table
// that `herald migrate` never set up, or that is behind this build's
// schema; its text names the command that fixes it. It wraps
// store.ErrSchema.
type NotMigratedError struct{ msg string }

func (e *NotMigratedError) Error() string { return e.msg }

// Unwrap makes errors.Is(err, store.ErrSchema) true.
func (e *NotMigratedError) Unwrap() error { return store.ErrSchema }

func notMigrated(format string, args ...any) error {
	return &NotMigratedError{fmt.Sprintf(format, args...)}
}

// CheckDatabaseExists refuses a database file (SQLite's, through
// store.FileDatabase) that does not exist, before opening it would create
// an empty one. Server databases are checked by CheckMigrated.
func CheckDatabaseExists(s Store) error {
	fd, ok := s.Config.(store.FileDatabase)
	if !ok {
		return nil
	}
	path := fd.File(s.DSN)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return notMigrated("no Herald database at %s: run `herald migrate` (or `herald run`) here first, or point --config at the right one", path)
	}
	return nil
}

// CheckMigrated refuses a lane table that is missing, lacks columns this
// build reads (store.TableChecker), was never migrated or is behind this
// build's schema, naming the lane and what fixes it (`herald migrate`).
// Any other error (the database did not answer) is returned as it is.
func (rt *Runtime) CheckMigrated(ctx context.Context) error {
	if tc, ok := rt.Store.(store.TableChecker); ok {
		for _, l := range rt.File.Lanes {
			if err := tc.CheckTable(ctx, l.Table); errors.Is(err, store.ErrSchema) {
				return &NotMigratedError{msg: fmt.Sprintf("lane %s: %v", l.Name, err)}
			} else if err != nil {
				return err
			}
		}
		return nil
	}
	sc, ok := rt.Store.(store.SchemaChecker)
	if !ok {
		return nil
	}
	for _, l := range rt.File.Lanes {
		cur, latest, err := sc.SchemaVersion(ctx, l.Table)
		if err != nil {
			return err
		}
		switch {
		case cur == 0:
			return notMigrated("table %s (lane %s) does not exist yet: run `herald migrate` first", l.Table, l.Name)
		case cur < latest:
			return notMigrated("table %s (lane %s) is at schema version %d of %d: run `herald migrate`", l.Table, l.Name, cur, latest)
		}
	}
	return nil
}
