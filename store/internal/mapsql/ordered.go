package mapsql

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// Ordered claims on a mapped table (ordering: key). The table has no row
// id, so a key's order is its rows' (created_at, event id) order, and the
// rule is Herald's own tables' (store package doc): a row of a key is
// claimable only if no earlier row of the key (and tenant, where mapped)
// is in the way — pending but not due (backing off), in flight under a
// live lease, or dead when parking — and only if no earlier unfinished
// row of the key lies outside the batch (locked by another worker, or
// cut by the limit). A row whose key column is NULL is not held back.
// Both reads go through the (key, created_at) index (docs/adopt.md).

// errOrderedColumns refuses an ordered claim on a table mapped without
// the columns its order needs (configuration refuses such a lane first).
var errOrderedColumns = errors.New("ordered claims need columns.key and columns.created_at on a mapped table")

// lockOrdered locks up to p.Limit due rows that no earlier row of their
// key holds back, each status value in turn, and returns them in each
// key's order.
func (t *Table) lockOrdered(ctx context.Context, tx Runner, p store.ClaimParams, statuses []string) ([]store.Record, error) {
	if t.c.Key == "" || t.c.CreatedAt == "" {
		return nil, errOrderedColumns
	}
	var cands []store.Record
	for _, status := range statuses {
		room := p.Limit - len(cands)
		if room == 0 {
			break
		}
		got, err := t.lockDueOrdered(ctx, tx, p, status, room)
		if err != nil {
			return nil, err
		}
		cands = append(cands, got...)
	}
	kept, err := t.keepOrdered(ctx, tx, p, cands)
	if err != nil {
		return nil, err
	}
	// The relay publishes a key's rows in the order of the batch.
	slices.SortStableFunc(kept, func(a, b store.Record) int {
		return cmp.Or(a.Event.CreatedAt.Compare(b.Event.CreatedAt), cmp.Compare(a.Event.ID, b.Event.ID))
	})
	return kept, nil
}

// lockDueOrdered is lockDue (without a cursor) for an ordered lane: the
// due rows of status that no earlier row of their key holds back, in the
// keys' order, so that the head of every key that can move comes before
// the rows it holds back (read by due time, a window of later rows of a
// few keys could hide every head, and the lane would stall).
func (t *Table) lockDueOrdered(ctx context.Context, tx Runner, p store.ClaimParams, status string, limit int) ([]store.Record, error) {
	due := t.dueColumn(status)
	scope, scopeArgs := sqlbuild.ScopeWhereColumns(p.Scope, t.c.Tenant, t.c.Type)
	held, heldArgs := t.heldBack(p.ParkOnDead)
	q := "SELECT " + t.recordColumns(due) + " FROM " + t.quoted + " r WHERE " + t.c.Status + " = ? AND " + due + " <= " +
		t.now() + scope + " AND NOT EXISTS (" + held + ") ORDER BY " + t.c.CreatedAt + ", " + t.c.ID + " LIMIT ?" + t.ts.d.Lock
	args := append(append(append([]any{status}, scopeArgs...), heldArgs...), limit)
	rows, err := tx.QueryContext(ctx, t.rebind(q), args...)
	if err != nil {
		return nil, err
	}
	recs, _, err := t.scanRecords(rows)
	return recs, err
}

// sameKeyBefore is the condition that row e is an earlier row of row r's
// key (and tenant).
func (t *Table) sameKeyBefore() string {
	c := t.c
	cond := "e." + c.Key + " = r." + c.Key
	if c.Tenant != "" {
		cond += " AND e." + c.Tenant + " = r." + c.Tenant
	}
	return cond + " AND (e." + c.CreatedAt + " < r." + c.CreatedAt + " OR e." + c.CreatedAt + " = r." + c.CreatedAt +
		" AND e." + c.ID + " < r." + c.ID + ")"
}

// heldBack is the subquery, on outer row r, of an earlier row of its key
// that cannot be claimed now; a plain read, so that rows other workers
// hold locked count.
func (t *Table) heldBack(park bool) (string, []any) {
	c, ss := t.c, t.m.Statuses
	pending, args := t.statusIn(ss.Pending)
	cond := "(e." + pending + " AND e." + c.NextAttempt + " > " + t.now() + " OR e." + c.Status + " = ? AND e." +
		c.LeaseUntil + " > " + t.now()
	args = append(args, ss.InFlight)
	if park {
		cond += " OR e." + c.Status + " = ?"
		args = append(args, ss.Dead)
	}
	return "SELECT 1 FROM " + t.quoted + " e WHERE " + t.sameKeyBefore() + " AND " + cond + ")", args
}

// keepOrdered drops the candidates that have an earlier unfinished row
// of their key outside the candidates: a row another worker holds locked
// (SKIP LOCKED passed over it), or one the limit cut.
func (t *Table) keepOrdered(ctx context.Context, tx Runner, p store.ClaimParams, cands []store.Record) ([]store.Record, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	ids := make([]string, len(cands))
	for i, r := range cands {
		ids[i] = r.Event.ID
	}
	ss := t.m.Statuses
	unfinished := append(slices.Clone(ss.Pending), ss.InFlight)
	if p.ParkOnDead {
		unfinished = append(unfinished, ss.Dead)
	}
	marks := sqlbuild.Marks(len(ids))
	q := "SELECT r." + t.c.ID + " FROM " + t.quoted + " r WHERE r." + t.c.ID + " IN (" + marks + ") AND EXISTS (SELECT 1 FROM " +
		t.quoted + " e WHERE " + t.sameKeyBefore() + " AND e." + t.c.Status + " IN (" + sqlbuild.Marks(len(unfinished)) +
		") AND e." + t.c.ID + " NOT IN (" + marks + "))"
	args := append(append(sqlbuild.StringArgs(ids), sqlbuild.StringArgs(unfinished)...), sqlbuild.StringArgs(ids)...)
	rows, err := tx.QueryContext(ctx, t.rebind(q), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	blocked := map[string]bool{}
	for rows.Next() {
		var id any
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		blocked[text(id)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	kept := cands[:0]
	for _, r := range cands {
		if !blocked[r.Event.ID] {
			kept = append(kept, r)
		}
	}
	return kept, nil
}
