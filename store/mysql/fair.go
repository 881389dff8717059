package mysql

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlcommon"
)

var _ store.TenantLister = (*Store)(nil)

// ClaimableTenants implements store.TenantLister for fair lanes. Each of
// the two claimable states is one GROUP BY over the tenant_claim index
// (tenant, tenant_status, tenant_available_at, id), read alone (covering),
// never the rows. Since schema version 2 keys that index on virtual
// columns, MariaDB does no loose index scan of it (measured: EXPLAIN shows
// a full read of the index even for a plain MIN per tenant), so the list
// costs one index entry per row of a named tenant, not one dive per
// tenant. Type filters are not in the index: a lane with them reads its
// tenants' rows.
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
	// tenant_claim is keyed on the virtual columns of schema version 2
	// (migrations/outbox_0002_ready_columns.sql): status and due time only
	// for named tenants, which are the only ones listed here.
	q := "SELECT r.tenant, MIN(r.tenant_available_at) FROM " + table + ` r FORCE INDEX (tenant_claim)
WHERE r.tenant_status = ? AND r.tenant_available_at <= UTC_TIMESTAMP(6)` + filters +
		" GROUP BY r.tenant ORDER BY r.tenant LIMIT ?"
	return q, append(append([]any{string(status)}, args...), limit)
}
