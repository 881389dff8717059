package mapsql

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// ClaimableTenants returns, in name order, at most limit named tenants
// other than those in skip with claimable rows in s: due in a pending
// value, or in flight with their lease run out (store.TenantLister, for
// fair lanes). A plain read, through the (tenant, status, next_attempt)
// index where the table has one.
func (t *Table) ClaimableTenants(ctx context.Context, s store.Scope, limit int, skip []string) ([]string, error) {
	if t.c.Tenant == "" {
		return nil, errors.New("fair lanes need columns.tenant on a mapped table")
	}
	if s.Tenant != "" || limit <= 0 {
		return nil, fmt.Errorf("%s: claimable tenants of %s need a scope without a tenant and a positive limit", t.ts.d.Name, t.name)
	}
	pending, args := t.statusIn(t.m.Statuses.Pending)
	scope, scopeArgs := sqlbuild.ScopeWhereColumns(s, t.c.Tenant, t.c.Type)
	q := "SELECT DISTINCT " + t.c.Tenant + " FROM " + t.quoted + " WHERE (" + pending + " AND " + t.c.NextAttempt + " <= " +
		t.now() + " OR " + t.c.Status + " = ? AND " + t.c.LeaseUntil + " <= " + t.now() + ") AND " + t.c.Tenant + " <> ''" + scope
	args = append(append(args, t.m.Statuses.InFlight), scopeArgs...)
	if len(skip) > 0 {
		q += " AND " + t.c.Tenant + " NOT IN (" + sqlbuild.Marks(len(skip)) + ")"
		args = append(args, sqlbuild.StringArgs(skip)...)
	}
	rows, err := t.ts.db.QueryContext(ctx, t.rebind(q+" ORDER BY "+t.c.Tenant+" LIMIT ?"), append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("%s: claimable tenants of %s: %w", t.ts.d.Name, t.name, err)
	}
	defer rows.Close()
	var tenants []string
	for rows.Next() {
		var v any
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		tenants = append(tenants, text(v))
	}
	return tenants, rows.Err()
}
