package config

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/heraldhq/herald/store"
)

// NotMigratedError is returned when a command that only reads or writes
// rows finds a database or table that `herald migrate` never set up; its
// text names the command that fixes it.
type NotMigratedError struct{ msg string }

func (e *NotMigratedError) Error() string { return e.msg }

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

// CheckMigrated refuses a lane table that was never migrated or is behind
// this build's schema, naming the command that fixes it.
func (rt *Runtime) CheckMigrated(ctx context.Context) error {
	for _, l := range rt.File.Lanes {
		cur, latest, err := rt.Store.SchemaVersion(ctx, l.Table)
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
