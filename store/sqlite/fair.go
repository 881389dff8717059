package sqlite

import (
	"context"
	"errors"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/claimrule"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

var _ store.TenantLister = (*Store)(nil)

var errBadTenantList = errors.New("sqlite store: bad tenant list parameters")

// ClaimableTenants implements store.TenantLister for fair lanes. SQLite's
// outbox has no tenant index (a SQLite outbox is one application's), so
// this reads every claimable row's entry in the claim index, and a fair
// lane's per-tenant claims filter that index too: fair lanes are for
// MySQL/MariaDB and PostgreSQL, where both are index dives per tenant; on
// SQLite they work, at a cost that grows with the backlog.
func (s *Store) ClaimableTenants(ctx context.Context, sc store.Scope, limit int) ([]string, error) {
	if t := s.mapped.Get(sc.Table); t != nil {
		return t.ClaimableTenants(ctx, sc, limit, nil) // a mapped table (docs/adopt.md)
	}
	qt, err := quote(sc.Table)
	if err != nil {
		return nil, err
	}
	if err := claimrule.CheckTenantList(sc, limit, errBadTenantList); err != nil {
		return nil, err
	}
	filter, args := scopeFilter("o", sc)
	q := `SELECT DISTINCT o.tenant FROM ` + qt + ` o INDEXED BY "` + sc.Table + `_claim"
WHERE o.status IN ('pending', 'in_flight') AND o.available_at <= ` + now + ` AND o.tenant <> ''` + filter +
		` ORDER BY o.tenant LIMIT ?`
	tenants, err := sqlscan.QueryStrings(ctx, s.db, q, append(args, limit)...)
	if err != nil {
		return nil, wrap("claimable tenants", sc.Table, err)
	}
	return tenants, nil
}
