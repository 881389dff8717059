package mapsql

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// DefaultCleanupLimit bounds one state's deletes in one round when the
// params give no limit.
const DefaultCleanupLimit = 1000

// Cleanup implements store.Store.Cleanup on a mapped table: per state, at
// most p.Limit rows older than that state's age, oldest first. A mapped
// table has no column of its rows' last change, so delivered rows are aged
// by delivered_at when it is mapped, else (like dead rows) by lease_until:
// the end of the claim that delivered or killed them. Pending rows are
// aged by created_at (lane validation refuses retention.active without it).
func (t *Table) Cleanup(ctx context.Context, p store.CleanupParams) (int64, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = DefaultCleanupLimit
	}
	rounds := []struct {
		age      time.Duration
		statuses []string
		col      string
	}{
		{p.Delivered, []string{t.m.Statuses.Delivered}, or(t.c.DeliveredAt, t.c.LeaseUntil)},
		{p.Dead, []string{t.m.Statuses.Dead}, t.c.LeaseUntil},
		{p.Active, t.m.Statuses.Pending, t.c.CreatedAt},
	}
	var total int64
	for _, r := range rounds {
		if r.age <= 0 || r.col == "" {
			continue
		}
		n, err := t.deleteOld(ctx, p.Scope, r.statuses, r.col, r.age, limit)
		if err != nil {
			return total, fmt.Errorf("%s: cleanup %s: %w", t.ts.d.Name, t.name, err)
		}
		total += n
	}
	return total, nil
}

// deleteOld deletes up to limit rows in statuses whose col is older than
// age, oldest first. The limit sits in a derived table, the one form that
// MySQL/MariaDB (no LIMIT in an IN subquery), PostgreSQL and SQLite share.
func (t *Table) deleteOld(ctx context.Context, sc store.Scope, statuses []string, col string, age time.Duration,
	limit int) (int64, error) {
	in, args := t.statusIn(statuses)
	scope, sargs := sqlbuild.ScopeWhereColumns(sc, t.c.Tenant, t.c.Type)
	q := "DELETE FROM " + t.quoted + " WHERE " + t.c.ID + " IN (SELECT " + t.c.ID + " FROM (SELECT " + t.c.ID +
		" FROM " + t.quoted + " WHERE " + in + " AND " + col + " <= " + t.later() + scope +
		" ORDER BY " + col + " LIMIT ?) old)"
	args = append(append(append(args, -age.Milliseconds()), sargs...), limit)
	var n int64
	err := t.ts.inTx(ctx, func(tx Runner) error {
		res, err := tx.ExecContext(ctx, t.rebind(q), args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
