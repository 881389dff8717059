package postgres

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/claimrule"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

var (
	_ store.TenantLister     = (*Store)(nil)
	_ store.TenantSkipLister = (*Store)(nil)
)

// ClaimableTenants implements store.TenantLister for fair lanes: a skip
// scan of the partial tenant_claim index (tenant, status, available_at,
// id; claimable states, named tenants only), one index descent per tenant
// for the next tenant name with a claimable row, however many rows a
// tenant has waiting. Type filters are not in the index: a lane with them
// reads its tenants' index entries row by row.
func (s *Store) ClaimableTenants(ctx context.Context, sc store.Scope, limit int) ([]string, error) {
	return s.ClaimableTenantsExcept(ctx, sc, limit, nil)
}

// ClaimableTenantsExcept implements store.TenantSkipLister: the same skip
// scan, in gaps between the skipped tenants. Each descent is bounded above
// by the next skipped name, so it never enters a skipped tenant's range:
// during a drain that range starts with the entries of the rows claimed
// and marked since the last vacuum (every claim and mark writes new ones,
// as indexed columns change), which a descent would walk. The gaps are cut
// in SQL, so that they follow the column's collation, not Go's byte order.
//
// The walk is one recursion over (name, gap): a descent finds the next
// tenant after name below the gap's end, or, finding none, moves to the
// next gap; tenants come out in name order and LIMIT stops the walk.
// (OFFSET 0 keeps the planner from pulling the descent up into the three
// places that use its result, which would run it three times.)
func (s *Store) ClaimableTenantsExcept(ctx context.Context, sc store.Scope, limit int, skip []string) ([]string, error) {
	if t := s.mapped.Get(sc.Table); t != nil {
		return t.ClaimableTenants(ctx, sc, limit, skip) // a mapped table (docs/adopt.md)
	}
	table, err := quote(sc.Table)
	if err != nil {
		return nil, err
	}
	if err := claimrule.CheckTenantList(sc, limit, ErrBadClaim); err != nil {
		return nil, err
	}
	if skip == nil {
		skip = []string{}
	}
	filters, fargs := sqlbuild.ScopeWhere(sc, "r")
	// The WHERE terms repeat the partial index's, so the planner can use it.
	next := "SELECT MIN(r.tenant) FROM " + table + ` r
  WHERE r.status IN ('pending', 'in_flight') AND r.tenant <> '' AND r.available_at <= now() AND r.tenant > t.name` + filters
	q := `WITH RECURSIVE b(s) AS (SELECT COALESCE(array_agg(DISTINCT x ORDER BY x), '{}') FROM unnest(?::text[]) x),
t(name, gap, hit) AS (
  SELECT ''::text, 1, false
  UNION ALL
  SELECT COALESCE(n.x, b.s[t.gap]), t.gap + (n.x IS NULL)::int, n.x IS NOT NULL
  FROM t CROSS JOIN b CROSS JOIN LATERAL (SELECT CASE WHEN b.s[t.gap] IS NULL
    THEN (` + next + `)
    ELSE (` + next + ` AND r.tenant < b.s[t.gap]) END AS x OFFSET 0) n
  WHERE t.gap <= cardinality(b.s) + 1)
SELECT name FROM t WHERE hit LIMIT ?`
	args := append(append(append([]any{skip}, fargs...), fargs...), limit)
	tenants, err := sqlscan.QueryStrings(ctx, s.db, sqlbuild.Rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres store: claimable tenants of %s: %w", sc.Table, err)
	}
	return tenants, nil
}
