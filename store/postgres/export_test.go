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
