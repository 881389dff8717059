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
