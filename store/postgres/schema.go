package postgres

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/store/internal/sqlcommon"
)

// SchemaVersion implements store.SchemaChecker: the table's version in
// herald_migrations (0 when that table does not exist yet) and the latest.
func (s *Store) SchemaVersion(ctx context.Context, table string) (current, latest int, err error) {
	ms, err := sqlcommon.LoadMigrations(migrationFiles, "outbox")
	if err != nil {
		return 0, 0, fmt.Errorf("postgres store: %w", err)
	}
	latest = ms[len(ms)-1].Version
	var exists bool
	if err := s.db.QueryRowContext(ctx, "SELECT to_regclass('herald_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return 0, latest, fmt.Errorf("postgres store: schema version of %s: %w", table, err)
	}
	if !exists {
		return 0, latest, nil
	}
	if err := s.db.QueryRowContext(ctx,
		"SELECT COALESCE(MAX(version), 0) FROM herald_migrations WHERE table_name = $1", table).Scan(&current); err != nil {
		return 0, latest, fmt.Errorf("postgres store: schema version of %s: %w", table, err)
	}
	return current, latest, nil
}
