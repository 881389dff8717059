package mapsql

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// The marks after a publish change each row by its event id, and only
// while it is still in flight under the claim that took it (fenced): its
// token in the fence column, or the owner#token the claim wrote into the
// lease owner column. Every statement changes one row, so that its rows
// affected says whether the row was still held; a batch's statements run
// in one transaction.

// set is one mark's SET clause and its arguments for one row.
type set func(i int) (string, []any)

// Complete marks rows delivered, keeping each receipt where the table has
// a receipt column.
func (t *Table) Complete(ctx context.Context, f store.Fence, ds []store.Delivery) ([]int64, error) {
	ids := make([]int64, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	c := t.c
	return t.mark(ctx, "complete", f, ids, func(i int) (string, []any) {
		q, args := c.Status+" = ?", []any{t.m.Statuses.Delivered}
		if c.DeliveredAt != "" {
			q += ", " + c.DeliveredAt + " = " + t.now()
		}
		if c.Receipt != "" {
			q += ", " + c.Receipt + " = ?"
			args = append(args, ds[i].Receipt.JSON())
		}
		return q, args
	})
}

// Retry puts rows back to the retry status, due again after each RetryIn,
// counting the failure.
func (t *Table) Retry(ctx context.Context, f store.Fence, fs []store.Failure) ([]int64, error) {
	c := t.c
	return t.mark(ctx, "retry", f, failureIDs(fs), func(i int) (string, []any) {
		q := c.Status + " = ?, " + c.NextAttempt + " = " + t.later()
		return t.failed(q, []any{t.m.Statuses.Retry, fs[i].RetryIn.Milliseconds()}, fs[i])
	})
}

// Kill moves rows to dead, keeping the error and counting the failure.
func (t *Table) Kill(ctx context.Context, f store.Fence, fs []store.Failure) ([]int64, error) {
	return t.mark(ctx, "kill", f, failureIDs(fs), func(i int) (string, []any) {
		return t.failed(t.c.Status+" = ?", []any{t.m.Statuses.Dead}, fs[i])
	})
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
	return t.mark(ctx, "release", f, ids, func(int) (string, []any) {
		return t.c.Status + " = ?, " + t.c.NextAttempt + " = " + t.now(), []any{t.m.Statuses.Pending[0]}
	})
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

// mark runs one fenced statement per row of ids, all in one transaction:
// an UPDATE with what set returns, or a DELETE when set is nil. It
// returns the ids whose rows were no longer held.
func (t *Table) mark(ctx context.Context, op string, f store.Fence, ids []int64, set set) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if f.Table != t.name {
		return nil, fmt.Errorf("%s: %s %s: a fence of table %s", t.ts.d.Name, op, t.name, f.Table)
	}
	rows, known := t.handles.get(ids)
	var lost []int64
	err := t.ts.inTx(ctx, func(tx Runner) error {
		lost = nil
		for i, id := range ids {
			held := known[i]
			if held {
				var err error
				if held, err = t.markRow(ctx, tx, f, rows[i], i, set); err != nil {
					return err
				}
			}
			if !held {
				lost = append(lost, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %s %s: %w", t.ts.d.Name, op, t.name, err)
	}
	t.handles.forget(ids)
	return lost, nil
}

// markRow changes row i if it is still held, and says whether it was.
func (t *Table) markRow(ctx context.Context, tx Runner, f store.Fence, row claimedRow, i int, set set) (bool, error) {
	c := t.c
	where := " WHERE " + c.ID + " = ? AND " + c.Status + " = ?"
	args := []any{row.eventID, t.m.Statuses.InFlight}
	if c.Fence != "" {
		where += " AND " + c.Fence + " = ?"
		args = append(args, f.Token)
	} else {
		where += " AND " + c.LeaseOwner + " = ?"
		args = append(args, row.owner)
	}
	q := "DELETE FROM " + t.quoted + where
	if set != nil {
		s, setArgs := set(i)
		q, args = "UPDATE "+t.quoted+" SET "+s+where, append(setArgs, args...)
	}
	res, err := tx.ExecContext(ctx, t.rebind(q), args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
