package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/heraldhq/herald/config"
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
func CheckDatabaseExists(s config.Store) error {
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
// build reads (store.Store.CheckTable), was never migrated or is behind this
// build's schema, naming the lane and what fixes it (`herald migrate`).
// Any other error (the database did not answer) is returned as it is.
func (rt *Runtime) CheckMigrated(ctx context.Context) error {
	for _, l := range rt.File.Lanes {
		if err := rt.Store.CheckTable(ctx, l.Table); errors.Is(err, store.ErrSchema) {
			return &NotMigratedError{msg: fmt.Sprintf("lane %s: %v", l.Name, err)}
		} else if err != nil {
			return err
		}
	}
	return nil
}
