package sqlscan

import (
	"context"
	"database/sql"
)

// QueryStrings runs a query and returns its first column's values as
// strings; other columns are read and dropped.
func QueryStrings(ctx context.Context, db *sql.DB, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var v string
		dest := []any{&v}
		for range cols[1:] {
			dest = append(dest, new(any))
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
