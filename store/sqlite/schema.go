package sqlite

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/store/internal/sqlmigrate"
)

// SchemaVersion implements store.SchemaChecker: the table's version in
// herald_migrations (0 when that table does not exist yet) and the latest.
func (s *Store) SchemaVersion(ctx context.Context, table string) (current, latest int, err error) {
	latest = outboxMigrations[len(outboxMigrations)-1].version
	var exists int
	if err := s.db.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'herald_migrations'`).Scan(&exists); err != nil {
		return 0, latest, fmt.Errorf("sqlite: schema version of %s: %w", table, err)
	}
	if exists == 0 {
		return 0, latest, nil
	}
	if err := s.db.QueryRowContext(ctx,
		`SELECT COALESCE(MAX(version), 0) FROM herald_migrations WHERE table_name = ?`, table).Scan(&current); err != nil {
		return 0, latest, fmt.Errorf("sqlite: schema version of %s: %w", table, err)
	}
	return current, latest, nil
}

// outboxColumns are an outbox table's columns at the latest version.
var outboxColumns = []string{"id", "event_id", "tenant", "topic", "event_type", "partition_key", "headers",
	"payload", "created_at", "available_at", "status", "attempts", "last_error", "lease_owner", "lease_token",
	"delivered_at", "updated_at", "receipt", "attempt_errors"}

// CheckTable implements store.TableChecker.
func (s *Store) CheckTable(ctx context.Context, table string) error {
	if t := s.mapped.Get(table); t != nil {
		return t.Check(ctx)
	}
	return sqlmigrate.CheckTable(ctx, s.db, table, sqlmigrate.TableSchema{Name: "sqlite",
		Columns: `SELECT name FROM pragma_table_info(?)`, Want: outboxColumns, Version: s.SchemaVersion,
		Own: lockTable, OwnLatest: lockMigrations[len(lockMigrations)-1].version})
}
