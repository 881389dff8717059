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
	// Both states in one round trip; each branch keeps its loose scan.
	pq, pargs := claimableTenantsQuery(table, store.StatusPending, sc, limit)
	fq, fargs := claimableTenantsQuery(table, store.StatusInFlight, sc, limit)
	tenants, err := sqlcommon.QueryStrings(ctx, s.db, "("+pq+") UNION ALL ("+fq+")", append(pargs, fargs...)...)
	if err != nil {
		return nil, fmt.Errorf("mysql store: claimable tenants of %s: %w", sc.Table, err)
	}
	return sqlcommon.SortedUnique(tenants, limit), nil
}

// claimableTenantsQuery is one state's GROUP BY; see ClaimableTenants.
func claimableTenantsQuery(table string, status store.Status, sc store.Scope, limit int) (string, []any) {
	filters, args := sqlcommon.ScopeWhere(sc, "r")
	// The MIN is what makes it a loose scan (a plain GROUP BY reads every
	// entry of the range); QueryStrings drops it.
	q := "SELECT r.tenant, MIN(r.available_at) FROM " + table + ` r FORCE INDEX (tenant_claim)
WHERE r.tenant <> '' AND r.status = ? AND r.available_at <= UTC_TIMESTAMP(6)` + filters +
		" GROUP BY r.tenant ORDER BY r.tenant LIMIT ?"
	return q, append(append([]any{string(status)}, args...), limit)
}
