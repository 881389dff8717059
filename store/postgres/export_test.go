package postgres

import (
	"context"
	"database/sql"
)

// MigrateProjectionsTo creates or upgrades the projection table to schema
// version v, not beyond, for upgrade tests.
func (s *Store) MigrateProjectionsTo(ctx context.Context, table string, v int) error {
	return s.underMigrateLock(ctx, table, func(tx *sql.Tx) error { return applyUpTo(ctx, tx, "projection", table, v) })
}

// OutboxColumns are the columns CheckTable requires.
var OutboxColumns = outboxColumns

// AutovacuumDisabled is autovacuumDisabled, for Advice's test on a server
// whose autovacuum is off (where Advice names the server, not the table).
func (s *Store) AutovacuumDisabled(ctx context.Context, table string) (bool, error) {
	return s.autovacuumDisabled(ctx, table)
}
