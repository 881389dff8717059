package mysql

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/claimrule"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

var _ store.TenantLister = (*Store)(nil)

// maxTenantDives is how many named tenants ClaimableTenants visits one at
// a time (two index dives each, one round trip) before it reads the rest
// of the tenant_claim index in one GROUP BY: a lane with a few tenants
// pays a few round trips whatever their backlogs, one with thousands of
// tenants one index read.
const maxTenantDives = 64

// ClaimableTenants implements store.TenantLister for fair lanes. It walks
// the named tenants in name order over the tenant_claim index (tenant,
// tenant_status, tenant_available_at, id): each step asks, with range
// reads of that index only, whether the tenant has a pending row that is
// due or an in-flight row whose lease ran out, and which tenant comes
// next. Since schema version 2 keys the index on virtual columns, MariaDB
// does no loose index scan of it, so the GROUP BY this replaced read every
// index entry of the named tenants: 0.2–1.2 s per list behind a backlog of
// 200,000 rows on a loaded two-core machine, against well under a
// millisecond a tenant walked. Type filters are not in the index: a lane
// with them reads its tenants' rows.
func (s *Store) ClaimableTenants(ctx context.Context, sc store.Scope, limit int) ([]string, error) {
	if t := s.mappedTables().Get(sc.Table); t != nil {
		return t.ClaimableTenants(ctx, sc, limit, nil) // a mapped table (docs/adopt.md)
	}
	table, err := quote(sc.Table)
	if err != nil {
		return nil, err
	}
	if err := claimrule.CheckTenantList(sc, limit, ErrBadClaim); err != nil {
		return nil, err
	}
	tenants, err := s.walkTenants(ctx, table, sc, limit)
	if err != nil {
		err = explainMissingIndex(err, sc.Table, store.TableUse{Tenants: true})
		return nil, fmt.Errorf("mysql store: claimable tenants of %s: %w", sc.Table, err)
	}
	return tenants, nil
}

// walkTenants is ClaimableTenants' walk: maxTenantDives steps, then the
// rest in one GROUP BY.
func (s *Store) walkTenants(ctx context.Context, table string, sc store.Scope, limit int) ([]string, error) {
	var next sql.NullString
	if err := s.db.QueryRowContext(ctx, "SELECT "+nextTenant(table), "").Scan(&next); err != nil {
		return nil, err
	}
	q, args := tenantStep(table, sc)
	var out []string
	for dives := 0; next.Valid && len(out) < limit; dives++ {
		tenant := next.String
		if dives == maxTenantDives {
			rest, err := s.groupTenants(ctx, table, sc, tenant, limit-len(out))
			return append(out, rest...), err
		}
		var claimable bool
		if err := s.db.QueryRowContext(ctx, q, args(tenant)...).Scan(&claimable, &next); err != nil {
			return nil, err
		}
		if claimable {
			out = append(out, tenant)
		}
	}
	return out, nil
}

// nextTenant is the first tenant after the one bound to ?, NULL after
// the last: one range dive of tenant_claim.
func nextTenant(table string) string {
	return "(SELECT n.tenant FROM " + table + " n FORCE INDEX (tenant_claim) WHERE n.tenant > ? ORDER BY n.tenant LIMIT 1)"
}

// tenantStep is one step of the walk: whether the tenant has claimable
// rows, and the next tenant. Each state is its own EXISTS, an equality on
// tenant and tenant_status and a range on the due time, so neither reads
// the tenant's finished rows (which sort before both states) nor its
// delayed ones.
func tenantStep(table string, sc store.Scope) (string, func(tenant string) []any) {
	filters, fargs := sqlbuild.ScopeWhere(sc, "r")
	exists := "EXISTS (SELECT 1 FROM " + table + ` r FORCE INDEX (tenant_claim)
WHERE r.tenant = ? AND r.tenant_status = ? AND r.tenant_available_at <= UTC_TIMESTAMP(6)` + filters + ")"
	q := "SELECT " + exists + " OR " + exists + ", " + nextTenant(table)
	return q, func(tenant string) []any {
		args := append([]any{tenant, string(store.StatusPending)}, fargs...)
		args = append(append(args, tenant, string(store.StatusInFlight)), fargs...)
		return append(args, tenant)
	}
}

// groupTenants lists the claimable tenants from from on with one GROUP BY
// per state over tenant_claim (covering: the index entries, never the
// rows), for lanes with more tenants than the walk visits.
func (s *Store) groupTenants(ctx context.Context, table string, sc store.Scope, from string, limit int) ([]string, error) {
	pq, pargs := claimableTenantsQuery(table, store.StatusPending, sc, from, limit)
	fq, fargs := claimableTenantsQuery(table, store.StatusInFlight, sc, from, limit)
	tenants, err := sqlscan.QueryStrings(ctx, s.db, "("+pq+") UNION ALL ("+fq+")", append(pargs, fargs...)...)
	if err != nil {
		return nil, err
	}
	return claimrule.SortedUnique(tenants, limit), nil
}

// claimableTenantsQuery is one state's GROUP BY; see groupTenants.
func claimableTenantsQuery(table string, status store.Status, sc store.Scope, from string, limit int) (string, []any) {
	filters, args := sqlbuild.ScopeWhere(sc, "r")
	// tenant_claim is keyed on the virtual columns of schema version 2
	// (migrations/outbox_0002_ready_columns.sql): status and due time only
	// for named tenants, which are the only ones listed here.
	q := "SELECT r.tenant FROM " + table + ` r FORCE INDEX (tenant_claim)
WHERE r.tenant >= ? AND r.tenant_status = ? AND r.tenant_available_at <= UTC_TIMESTAMP(6)` + filters +
		" GROUP BY r.tenant ORDER BY r.tenant LIMIT ?"
	return q, append(append([]any{from, string(status)}, args...), limit)
}
