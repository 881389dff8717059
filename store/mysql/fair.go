package mysql

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlcommon"
)

var _ store.TenantLister = (*Store)(nil)

// ClaimableTenants implements store.TenantLister for fair lanes. Each of
// the two claimable states is one GROUP BY off the tenant_claim index
// (tenant, status, available_at, id) with the status fixed and a range
// on the next column: a loose index scan, one dive per tenant, however
// many rows a tenant has waiting. Type filters are not in the index: a
// lane with them reads its tenants' index entries row by row.
func (s *Store) ClaimableTenants(ctx context.Context, sc store.Scope, limit int) ([]string, error) {
	table, err := quote(sc.Table)
	if err != nil {
		return nil, err
	}
	if err := sqlcommon.CheckTenantList(sc, limit, ErrBadClaim); err != nil {
		return nil, err
	}
	var out []string
	for _, status := range []store.Status{store.StatusPending, store.StatusInFlight} {
		q, args := claimableTenantsQuery(table, status, sc, limit)
		tenants, err := sqlcommon.QueryStrings(ctx, s.db, q, args...)
		if err != nil {
			return nil, fmt.Errorf("mysql store: claimable tenants of %s: %w", sc.Table, err)
		}
		out = append(out, tenants...)
	}
	return sqlcommon.SortedUnique(out, limit), nil
}

// claimableTenantsQuery is one state's GROUP BY; see ClaimableTenants.
func claimableTenantsQuery(table string, status store.Status, sc store.Scope, limit int) (string, []any) {
	filters, args := sqlcommon.ScopeWhere(sc, "")
	// The MIN is what makes it a loose scan (a plain GROUP BY reads every
	// entry of the range); QueryStrings drops it.
	q := "SELECT tenant, MIN(available_at) FROM " + table + ` FORCE INDEX (tenant_claim)
WHERE tenant <> '' AND status = ? AND available_at <= UTC_TIMESTAMP(6)` + filters +
		" GROUP BY tenant ORDER BY tenant LIMIT ?"
	return q, append(append([]any{string(status)}, args...), limit)
}
