package sqlcommon

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/heraldhq/herald/store"
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

// SortedUnique sorts vs, drops repeats and keeps at most limit of them.
func SortedUnique(vs []string, limit int) []string {
	slices.Sort(vs)
	vs = slices.Compact(vs)
	return vs[:min(len(vs), limit)]
}

// CheckTenantList checks the arguments of a ClaimableTenants call: a scope
// without a tenant (fair lanes share between tenants) and a positive limit.
func CheckTenantList(sc store.Scope, limit int, bad error) error {
	if sc.Tenant != "" || limit <= 0 {
		return fmt.Errorf("%w: claimable tenants of %s need a scope without a tenant and a positive limit (got %q, %d)",
			bad, sc.Table, sc.Tenant, limit)
	}
	return nil
}
