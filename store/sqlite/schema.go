package sqlite

import (
	"context"
	"fmt"
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
