package mapsql

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// The marks after a publish change rows by their event ids, and only
// while they are still in flight under the claim that took them (fenced):
// its token in the fence column, or the owner#token the claim wrote into
// the lease owner column. A mark first locks the rows still held, then
// changes those: two statements for a batch, or one per row more where
// rows get values of their own.

// set is one mark's SET clause and its arguments for row i. Unless
// perRow, every row gets row 0's, in one statement.
type set struct {
	clause func(i int) (string, []any)
	perRow bool
}

// Complete marks rows delivered, keeping each receipt where the table has
// a receipt column.
func (t *Table) Complete(ctx context.Context, f store.Fence, ds []store.Delivery) ([]int64, error) {
	ids := make([]int64, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	c := t.c
	return t.mark(ctx, "complete", f, ids, &set{perRow: c.Receipt != "", clause: func(i int) (string, []any) {
		q, args := c.Status+" = ?", []any{t.m.Statuses.Delivered}
		if c.DeliveredAt != "" {
			q += ", " + c.DeliveredAt + " = " + t.now()
		}
		if c.Receipt != "" {
			q += ", " + c.Receipt + " = ?"
			args = append(args, ds[i].Receipt.JSON())
		}
		return q, args
	}})
}

// Retry puts rows back to the retry status, due again after each RetryIn,
// counting the failure.
func (t *Table) Retry(ctx context.Context, f store.Fence, fs []store.Failure) ([]int64, error) {
	c := t.c
	return t.mark(ctx, "retry", f, failureIDs(fs), &set{perRow: true, clause: func(i int) (string, []any) {
		q := c.Status + " = ?, " + c.NextAttempt + " = " + t.later()
		return t.failed(q, []any{t.m.Statuses.Retry, fs[i].RetryIn.Milliseconds()}, fs[i])
	}})
}

// Kill moves rows to dead, keeping the error and counting the failure.
func (t *Table) Kill(ctx context.Context, f store.Fence, fs []store.Failure) ([]int64, error) {
	return t.mark(ctx, "kill", f, failureIDs(fs), &set{perRow: true, clause: func(i int) (string, []any) {
		return t.failed(t.c.Status+" = ?", []any{t.m.Statuses.Dead}, fs[i])
	}})
}

// failed adds the failure's error and count to a mark's SET clause.
func (t *Table) failed(q string, args []any, f store.Failure) (string, []any) {
	if t.c.LastError != "" {
		q += ", " + t.c.LastError + " = ?"
		args = append(args, sqlbuild.TrimError(f.Error))
	}
	if t.c.Attempts != "" {
		q += ", " + t.c.Attempts + " = " + t.c.Attempts + " + 1"
	}
	return q, args
}

// Release puts rows back to the first pending status, due at once: the
// claim did not count (the mapped counter counts failures only).
func (t *Table) Release(ctx context.Context, f store.Fence, ids []int64) ([]int64, error) {
	return t.mark(ctx, "release", f, ids, &set{clause: func(int) (string, []any) {
		return t.c.Status + " = ?, " + t.c.NextAttempt + " = " + t.now(), []any{t.m.Statuses.Pending[0]}
	}})
}

// Discard deletes stale rows instead of publishing them.
func (t *Table) Discard(ctx context.Context, f store.Fence, ids []int64) ([]int64, error) {
	return t.mark(ctx, "discard", f, ids, nil)
}

func failureIDs(fs []store.Failure) []int64 {
	ids := make([]int64, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
	}
	return ids
}

// mark runs one fenced mark of ids in one transaction: a locking read of
// the rows still held under the claim, then one UPDATE (with what set
// returns) or DELETE (set nil) of those rows — one per row when set gives
// each row its own values. It returns the ids whose rows were no longer
// held.
func (t *Table) mark(ctx context.Context, op string, f store.Fence, ids []int64, set *set) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if f.Table != t.name {
		return nil, fmt.Errorf("%s: %s %s: a fence of table %s", t.ts.d.Name, op, t.name, f.Table)
	}
	rows, known := t.handles.get(ids)
	var lost []int64
	err := t.ts.inTx(ctx, func(tx Runner) error {
		held, err := t.held(ctx, tx, f, rows, known)
		if err != nil {
			return err
		}
		lost = nil
		var keep []int
		for i, id := range ids {
			if held[rows[i].eventID] && known[i] {
				keep = append(keep, i)
			} else {
				lost = append(lost, id)
			}
		}
		return t.change(ctx, tx, rows, keep, set)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %s %s: %w", t.ts.d.Name, op, t.name, err)
	}
	t.handles.forget(ids)
	return lost, nil
}

// held locks and returns the event ids of rows that are still in flight
// under the claim: its token in the fence column, or the owner#token it
// wrote into the lease owner column (the same for every row of a claim).
func (t *Table) held(ctx context.Context, tx Runner, f store.Fence, rows []claimedRow, known []bool) (map[string]bool, error) {
	var evIDs []string
	owner := ""
	for i, r := range rows {
		if known[i] {
			evIDs = append(evIDs, r.eventID)
			owner = r.owner
		}
	}
	out := map[string]bool{}
	if len(evIDs) == 0 {
		return out, nil
	}
	c := t.c
	fence, token := c.LeaseOwner, any(owner)
	if c.Fence != "" {
		fence, token = c.Fence, f.Token
	}
	q := "SELECT " + c.ID + " FROM " + t.quoted + " WHERE " + c.ID + " IN (" + sqlbuild.Marks(len(evIDs)) + ") AND " +
		c.Status + " = ? AND " + fence + " = ?" + t.ts.d.ForUpdate
	args := append(sqlbuild.StringArgs(evIDs), t.m.Statuses.InFlight, token)
	rs, err := tx.QueryContext(ctx, t.rebind(q), args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	for rs.Next() {
		var id any
		if err := rs.Scan(&id); err != nil {
			return nil, err
		}
		out[text(id)] = true
	}
	return out, rs.Err()
}

// change updates (or, set nil, deletes) the rows keep indexes, which
// held has locked: in one statement, or one per row when set gives rows
// values of their own (a retry's backoff, an error, a receipt).
func (t *Table) change(ctx context.Context, tx Runner, rows []claimedRow, keep []int, set *set) error {
	if len(keep) == 0 {
		return nil
	}
	exec := func(idx []int, q string, args []any) error {
		ids := make([]string, len(idx))
		for j, i := range idx {
			ids[j] = rows[i].eventID
		}
		q += " WHERE " + t.c.ID + " IN (" + sqlbuild.Marks(len(ids)) + ")"
		_, err := tx.ExecContext(ctx, t.rebind(q), append(args, sqlbuild.StringArgs(ids)...)...)
		return err
	}
	if set == nil {
		return exec(keep, "DELETE FROM "+t.quoted, nil)
	}
	if !set.perRow {
		s, args := set.clause(keep[0])
		return exec(keep, "UPDATE "+t.quoted+" SET "+s, args)
	}
	for _, i := range keep {
		s, args := set.clause(i)
		if err := exec([]int{i}, "UPDATE "+t.quoted+" SET "+s, args); err != nil {
			return err
		}
	}
	return nil
}
