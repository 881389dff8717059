package postgres

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
		return 0, 0, fmt.Errorf("postgres store: %w", err)
	}
	current, err = sqlmigrate.SchemaVersion(ctx, s.db, "postgres store",
		"SELECT CASE WHEN to_regclass('herald_migrations') IS NULL THEN 0 ELSE 1 END",
		"SELECT COALESCE(MAX(version), 0) FROM herald_migrations WHERE table_name = $1", table)
	return current, ms[len(ms)-1].Version, err
}

// outboxColumns are an outbox table's columns at the latest version.
var outboxColumns = []string{"id", "event_id", "tenant", "topic", "event_type", "partition_key", "headers",
	"payload", "status", "attempts", "last_error", "lease_owner", "lease_token", "receipt", "created_at",
	"available_at", "delivered_at", "attempt_errors"}

// CheckTable implements store.TableChecker.
func (s *Store) CheckTable(ctx context.Context, table string) error {
	if t := s.mapped.Get(table); t != nil {
		return t.Check(ctx)
	}
	own, err := sqlmigrate.LoadMigrations(migrationFiles, "herald")
	if err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	return sqlmigrate.CheckTable(ctx, s.db, table, sqlmigrate.TableSchema{Name: "postgres store",
		Columns: `SELECT attname FROM pg_attribute
  WHERE attrelid = to_regclass(quote_ident($1)) AND attnum > 0 AND NOT attisdropped`,
		Want: outboxColumns, Version: s.SchemaVersion, Own: locksTable, OwnLatest: own[len(own)-1].Version})
}
