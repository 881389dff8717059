package mysql

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/store/internal/sqlmigrate"
)

// SchemaVersion implements store.SchemaChecker: the table's version in
// herald_migrations (0 when that table does not exist yet) and the latest.
func (s *Store) SchemaVersion(ctx context.Context, table string) (current, latest int, err error) {
	ms, err := sqlmigrate.LoadMigrations(migrationFiles, "outbox")
	if err != nil {
		return 0, 0, fmt.Errorf("mysql store: %w", err)
	}
	current, err = sqlmigrate.SchemaVersion(ctx, s.db, "mysql store", `SELECT COUNT(*) FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name = 'herald_migrations'`,
		"SELECT COALESCE(MAX(version), 0) FROM herald_migrations WHERE table_name = ?", table)
	return current, ms[len(ms)-1].Version, err
}

// outboxColumns are an outbox table's columns at the latest version, the
// virtual ones (versions 2 and 3) included.
var outboxColumns = []string{"id", "event_id", "tenant", "topic", "event_type", "partition_key", "headers",
	"payload", "status", "attempts", "last_error", "lease_owner", "lease_token", "receipt_padded", "created_at",
	"available_at", "delivered_at_stored", "tenant_status", "tenant_available_at", "ordered_pending",
	"ordered_available_at", "key_status", "receipt", "delivered_at", "attempt_errors"}

// CheckTable implements store.TableChecker.
func (s *Store) CheckTable(ctx context.Context, table string) error {
	if t := s.mappedTable(table); t != nil {
		return t.Check(ctx)
	}
	own, err := sqlmigrate.LoadMigrations(migrationFiles, "herald")
	if err != nil {
		return fmt.Errorf("mysql store: %w", err)
	}
	return sqlmigrate.CheckTable(ctx, s.db, table, sqlmigrate.TableSchema{Name: "mysql store",
		Columns: `SELECT column_name FROM information_schema.columns
  WHERE table_schema = DATABASE() AND table_name = ?`,
		Want: outboxColumns, Version: s.SchemaVersion, Own: locksTable, OwnLatest: own[len(own)-1].Version})
}
