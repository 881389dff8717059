package postgres

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlcommon"
)

var _ store.TenantLister = (*Store)(nil)

// ClaimableTenants implements store.TenantLister for fair lanes: a skip
// scan of the partial tenant_claim index (tenant, status, available_at,
// id; claimable states, named tenants only), one index descent per tenant
// for the next tenant name with a claimable row, however many rows a
// tenant has waiting. Type filters are not in the index: a lane with them
// reads its tenants' index entries row by row.
func (s *Store) ClaimableTenants(ctx context.Context, sc store.Scope, limit int) ([]string, error) {
	table, err := quote(sc.Table)
	if err != nil {
		return nil, err
	}
	if err := sqlcommon.CheckTenantList(sc, limit, ErrBadClaim); err != nil {
		return nil, err
	}
	filters, fargs := sqlcommon.ScopeWhere(sc, "r")
	// The WHERE terms repeat the partial index's, so the planner can use it.
	next := "SELECT MIN(r.tenant) FROM " + table + ` r
  WHERE r.status IN ('pending', 'in_flight') AND r.tenant <> '' AND r.available_at <= now()` + filters
	q := "WITH RECURSIVE t(tenant) AS ((" + next + `)
  UNION ALL
  SELECT (` + next + ` AND r.tenant > t.tenant) FROM t WHERE t.tenant IS NOT NULL)
SELECT tenant FROM t WHERE tenant IS NOT NULL LIMIT ?`
	args := append(append(append([]any{}, fargs...), fargs...), limit)
	tenants, err := sqlcommon.QueryStrings(ctx, s.db, sqlcommon.Rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres store: claimable tenants of %s: %w", sc.Table, err)
	}
	return tenants, nil
}
