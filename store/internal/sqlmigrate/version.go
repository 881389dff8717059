package sqlmigrate

import (
	"context"
	"database/sql"
	"fmt"
)

// SchemaVersion is store.SchemaChecker's query on a server database:
// exists is a query counting herald_migrations (0 before any migration),
// version one reading table's version with one bind parameter.
func SchemaVersion(ctx context.Context, db *sql.DB, name, exists, version, table string) (int, error) {
	var n int
	if err := db.QueryRowContext(ctx, exists).Scan(&n); err != nil {
		return 0, fmt.Errorf("%s: schema version of %s: %w", name, table, err)
	}
	if n == 0 {
		return 0, nil
	}
	var cur int
	if err := db.QueryRowContext(ctx, version, table).Scan(&cur); err != nil {
		return 0, fmt.Errorf("%s: schema version of %s: %w", name, table, err)
	}
	return cur, nil
}
