package mapsql

import (
	"context"
	"fmt"
	"slices"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// The marks after a publish change rows by their event ids, and only
// while they are still in flight under the claim that took them (fenced):
// its token in the fence column, or the owner#token the claim wrote into
// the lease owner column. The fence is in each statement's WHERE, so a
// mark is one statement for a batch whose rows get the same values (a
// delivery without receipts, a release, a discard), or one per row in a
// transaction where rows get values of their own (a retry's backoff, an
// error, a receipt).

// set is one mark's SET clause and its arguments for row i. Unless
// perRow, every row gets row 0's, in one statement.
type set struct {
	clause func(i int) (string, []any)
	perRow bool
	target string // the status value the mark writes
}

// Complete marks rows delivered, keeping each receipt where the table has
// a receipt column.
func (t *Table) Complete(ctx context.Context, f store.Fence, ds []store.Delivery) ([]int64, error) {
	ids := make([]int64, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return t.mark(ctx, "complete", f, ids, t.completeSet(ds))
}

// completeSet is Complete's SET clause for ds.
func (t *Table) completeSet(ds []store.Delivery) *set {
	c := t.c
	return &set{perRow: c.Receipt != "", target: t.m.Statuses.Delivered, clause: func(i int) (string, []any) {
		q, args := c.Status+" = ?", []any{t.m.Statuses.Delivered}
		if c.DeliveredAt != "" {
			q += ", " + c.DeliveredAt + " = " + t.now()
		}
		if c.Receipt != "" {
			q += ", " + c.Receipt + " = ?"
			args = append(args, ds[i].Receipt.JSON())
		}
		return q, args
	}}
}

// Retry puts rows back to the retry status, due again after each RetryIn,
// counting the failure.
func (t *Table) Retry(ctx context.Context, f store.Fence, fs []store.Failure) ([]int64, error) {
	c := t.c
	return t.mark(ctx, "retry", f, failureIDs(fs), &set{perRow: true, target: t.m.Statuses.Retry, clause: func(i int) (string, []any) {
		q := c.Status + " = ?, " + c.NextAttempt + " = " + t.later()
		return t.failed(q, []any{t.m.Statuses.Retry, fs[i].RetryIn.Milliseconds()}, fs[i])
	}})
}

// Kill moves rows to dead, keeping the error and counting the failure.
func (t *Table) Kill(ctx context.Context, f store.Fence, fs []store.Failure) ([]int64, error) {
	return t.mark(ctx, "kill", f, failureIDs(fs), &set{perRow: true, target: t.m.Statuses.Dead, clause: func(i int) (string, []any) {
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
	return t.mark(ctx, "release", f, ids, &set{target: t.m.Statuses.Pending[0], clause: func(int) (string, []any) {
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

// mark runs one fenced mark of ids and returns the ids whose rows were
// no longer held under the claim (their lease was lost).
func (t *Table) mark(ctx context.Context, op string, f store.Fence, ids []int64, set *set) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if f.Table != t.name {
		return nil, fmt.Errorf("%s: %s %s: a fence of table %s", t.ts.d.Name, op, t.name, f.Table)
	}
	rows, known, held := t.held(ids)
	var (
		kept []bool
		err  error
	)
	if len(held) > 0 {
		switch {
		case set != nil && set.perRow:
			kept, err = t.markEach(ctx, rows, held, f, set)
		case t.ts.d.Returning:
			kept, err = t.markReturning(ctx, rows, held, f, set)
		default:
			kept, err = t.markAll(ctx, rows, held, f, set)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s %s: %w", t.ts.d.Name, op, t.name, err)
	}
	t.handles.forget(ids)
	var lost []int64
	for i, id := range ids {
		if !known[i] {
			lost = append(lost, id)
		}
	}
	for j, ok := range kept {
		if !ok {
			lost = append(lost, ids[held[j]])
		}
	}
	slices.Sort(lost)
	return lost, nil
}

// CompleteStatement is the statement, in the database's placeholders, and
// its arguments that marks the claimed records ids delivered under f, in
// one statement (the table keeps no receipts): for EXPLAIN, in tests and
// by hand. Ids not claimed through t are left out.
func (t *Table) CompleteStatement(f store.Fence, ids []int64) (string, []any) {
	rows, _, held := t.held(ids)
	if len(held) == 0 {
		return "", nil
	}
	mark := t.plainMark
	if t.ts.d.Returning {
		mark = t.returningMark
	}
	q, args := mark(rows, held, f, t.completeSet(make([]store.Delivery, len(ids))))
	return t.rebind(q), args
}

// held returns the claimed rows of ids (handles.get), whether each is
// known, and the indexes into ids of those that are.
func (t *Table) held(ids []int64) (rows []claimedRow, known []bool, held []int) {
	rows, known = t.handles.get(ids)
	for i := range ids {
		if known[i] {
			held = append(held, i)
		}
	}
	return rows, known, held
}

// fence is the WHERE clause that finds rows still held under the claim,
// by event id, and its arguments after the ids.
func (t *Table) fence(f store.Fence, rows []claimedRow, idx []int) (string, []any) {
	c := t.c
	col, token := c.LeaseOwner, any(rows[idx[0]].owner) // one claim: one owner
	if c.Fence != "" {
		col, token = c.Fence, f.Token
	}
	return " WHERE " + c.ID + " IN (" + sqlbuild.Marks(len(idx)) + ") AND " + t.markStatus() + " = ? AND " + col + " = ?",
		append(sqlbuild.StringArgs(eventIDs(rows, idx)), t.m.Statuses.InFlight, token)
}

// markAll changes (or, set nil, deletes) the held rows in one statement.
// Only when fewer rows changed than asked (a lease was lost, which is
// rare) does a second read find out which: see changedRows.
func (t *Table) markAll(ctx context.Context, rows []claimedRow, held []int, f store.Fence, set *set) ([]bool, error) {
	q, args := t.plainMark(rows, held, f, set)
	var n int64
	err := t.ts.autocommit(ctx, func(r Runner) error {
		res, err := r.ExecContext(ctx, t.rebind(q), args...)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	if err != nil || int(n) == len(held) || n == 0 {
		return slices.Repeat([]bool{n > 0}, len(held)), err
	}
	// The read runs after the statement committed, in a retry of its own:
	// retried together, a statement that had gone through would change
	// nothing the second time and report every row lost.
	var kept []bool
	err = t.ts.autocommit(ctx, func(r Runner) error {
		kept, err = t.changedRows(ctx, r, rows, held, f, set)
		return err
	})
	return kept, err
}

// plainMark is markAll's statement and its arguments.
func (t *Table) plainMark(rows []claimedRow, held []int, f store.Fence, set *set) (string, []any) {
	where, wargs := t.fence(f, rows, held)
	if set == nil {
		return t.deleteByID() + where, wargs
	}
	clause, sargs := set.clause(held[0])
	return t.updateByID() + clause + where, append(sargs, wargs...)
}

// changedRows tells which held rows markAll changed: for an update, those
// now in the target status under the claim's fence (a mark keeps the
// fence value, and no other claim writes this claim's token); for a
// delete, those gone. A row a release moved back to pending that another
// worker claimed in between reads as lost, which it is by then.
func (t *Table) changedRows(ctx context.Context, r Runner, rows []claimedRow, held []int, f store.Fence, set *set) ([]bool, error) {
	q := "SELECT " + t.c.ID + " FROM " + t.quoted + " WHERE " + t.c.ID + " IN (" + sqlbuild.Marks(len(held)) + ")"
	args := sqlbuild.StringArgs(eventIDs(rows, held))
	if set != nil {
		where, wargs := t.fence(f, rows, held)
		q, args = "SELECT "+t.c.ID+" FROM "+t.quoted+where, wargs
		args[len(held)] = set.target
	}
	found, err := t.queryIDs(ctx, r, q, args)
	if err != nil {
		return nil, err
	}
	kept := make([]bool, len(held))
	for j, i := range held {
		kept[j] = found[rows[i].eventID] == (set != nil)
	}
	return kept, nil
}

// markEach changes each held row with its own values, one fenced UPDATE
// per row in one transaction: a row none changed was no longer held.
func (t *Table) markEach(ctx context.Context, rows []claimedRow, held []int, f store.Fence, set *set) ([]bool, error) {
	var kept []bool
	err := t.ts.inTx(ctx, func(tx Runner) error {
		kept = make([]bool, len(held))
		for j, i := range held {
			where, wargs := t.fence(f, rows, []int{i})
			clause, sargs := set.clause(i)
			res, err := tx.ExecContext(ctx, t.rebind(t.updateByID()+clause+where), append(sargs, wargs...)...)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			kept[j] = n > 0
		}
		return nil
	})
	return kept, err
}

// updateByID and deleteByID begin statements that find their rows by
// event id, through the primary key where the dialect can force it and
// the id column is the whole key (markkey.go). An UPDATE leaves out the
// table's checks where it may (checks.go).
func (t *Table) updateByID() string {
	prefix, _ := t.updatePrefix.Load().(string)
	return prefix + "UPDATE " + t.quoted + t.primaryHint() + " SET "
}

func (t *Table) deleteByID() string {
	if h := t.primaryHint(); h != "" {
		return "DELETE o FROM " + t.quoted + " AS o" + h // the form of DELETE that takes a hint
	}
	return "DELETE FROM " + t.quoted
}

func (t *Table) primaryHint() string {
	if !t.idPrimary.Load() {
		return ""
	}
	return t.ts.d.PrimaryHint
}

// queryIDs runs q and returns the event ids it reads.
func (t *Table) queryIDs(ctx context.Context, r Runner, q string, args []any) (map[string]bool, error) {
	rs, err := r.QueryContext(ctx, t.rebind(q), args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[string]bool{}
	for rs.Next() {
		var id any
		if err := rs.Scan(&id); err != nil {
			return nil, err
		}
		out[text(id)] = true
	}
	return out, rs.Err()
}

// eventIDs returns the event ids of rows[idx].
func eventIDs(rows []claimedRow, idx []int) []string {
	out := make([]string, len(idx))
	for j, i := range idx {
		out[j] = rows[i].eventID
	}
	return out
}
