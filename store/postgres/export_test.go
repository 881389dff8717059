package postgres

import (
	"context"
	"database/sql"

	"github.com/heraldhq/herald/store"
)

// MigrateProjectionsTo creates or upgrades the projection table to schema
// version v, not beyond, for upgrade tests.
func (s *Store) MigrateProjectionsTo(ctx context.Context, table string, v int) error {
	return s.underMigrateLock(ctx, table, func(tx *sql.Tx) error { return applyUpTo(ctx, tx, "projection", table, v, store.TableUse{}) })
}

// OutboxColumns are the columns CheckTable requires.
var OutboxColumns = outboxColumns

// AutovacuumDisabled is autovacuumDisabled, for Advice's test on a server
// whose autovacuum is off (where Advice names the server, not the table).
func (s *Store) AutovacuumDisabled(ctx context.Context, table string) (bool, error) {
	return s.autovacuumDisabled(ctx, table)
}

// MigrateTo creates or upgrades table to schema version v, not beyond, for
// plain lanes, for upgrade tests.
func (s *Store) MigrateTo(ctx context.Context, table string, v int) error {
	return s.underMigrateLock(ctx, table, func(tx *sql.Tx) error {
		if err := apply(ctx, tx, "herald", locksTable); err != nil {
			return err
		}
		return applyUpTo(ctx, tx, "outbox", table, v, store.TableUse{})
	})
}
