package mysql

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
		return 0, 0, fmt.Errorf("mysql store: %w", err)
	}
	latest = ms[len(ms)-1].Version
	var exists int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name = 'herald_migrations'`).Scan(&exists); err != nil {
		return 0, latest, fmt.Errorf("mysql store: schema version of %s: %w", table, err)
	}
	if exists == 0 {
		return 0, latest, nil
	}
	if err := s.db.QueryRowContext(ctx,
		"SELECT COALESCE(MAX(version), 0) FROM herald_migrations WHERE table_name = ?", table).Scan(&current); err != nil {
		return 0, latest, fmt.Errorf("mysql store: schema version of %s: %w", table, err)
	}
	return current, latest, nil
}
