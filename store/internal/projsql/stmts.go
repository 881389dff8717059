package projsql

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/heraldhq/herald/store"
)

// ApplyStatements implements store.StatementApplier. A batch of new
// events goes through the dialect's Pipeline when it has one: the done
// rows, every statement and the commit sent at once, one round trip
// instead of one per statement. Otherwise, and for a batch that meets an
// existing row, the statements run one by one in ApplyBatch's transaction.
func (pr Projections) ApplyStatements(ctx context.Context, ps []store.ApplyParams,
	stmts func(i int) ([]store.Stmt, error)) ([]store.ApplyResult, error) {
	d := pr.d
	fn := func(tx *sql.Tx, i int) error {
		ss, err := stmts(i)
		if err != nil {
			return err
		}
		for _, st := range ss {
			if _, err := tx.ExecContext(ctx, st.SQL, st.Args...); err != nil {
				return named(st, err)
			}
		}
		return nil
	}
	if d.Pipeline == nil || d.Duplicate == nil {
		return pr.ApplyBatch(ctx, ps, fn)
	}
	return d.applyBatch(ctx, ps, func(tables []string, ps []store.ApplyParams, res []store.ApplyResult) (int, error, error) {
		if failed, herr, done, err := d.sendNew(ctx, tables, ps, stmts, res); done || err != nil {
			return failed, herr, err
		}
		return d.applyEach(ctx, tables, ps, fn, res)
	})
}

// sendNew is applyNew through Pipeline: the plain INSERT of every done
// row, then each event's statements, then COMMIT, in one round trip. The
// server stops at the first statement that fails and the transaction is
// rolled back: a duplicate key on the INSERT reports done = false (the
// caller goes event by event), a refused statement is its event's
// handler failure, as in applyNew.
func (d *Dialect) sendNew(ctx context.Context, tables []string, ps []store.ApplyParams,
	stmts func(i int) ([]store.Stmt, error), res []store.ApplyResult) (failed int, herr error, done bool, err error) {
	if !oneTable(tables) {
		return -1, nil, false, nil
	}
	batch := []store.Stmt{d.doneRows(tables[0], ps)}
	owner := []int{-1} // the event of each statement
	for i := range ps {
		ss, err := stmts(i)
		if err != nil {
			// Found before sending: nothing ran. The caller applies the
			// items before i and reports i failed.
			return i, err, true, nil
		}
		batch = append(batch, ss...)
		for range ss {
			owner = append(owner, i)
		}
	}
	k, err := d.Pipeline(ctx, batch)
	switch {
	case err == nil:
		for i := range ps {
			res[i] = store.ApplyResult{Outcome: store.Applied}
		}
		return -1, nil, true, nil
	case k == 0 && d.Duplicate(err):
		return -1, nil, false, nil
	case k <= 0:
		return -1, nil, false, fmt.Errorf("%s: apply batch: %w", d.Name, err)
	case d.Retryable(err):
		return -1, nil, false, err
	}
	i := owner[k]
	for j := range i + 1 {
		res[j] = store.ApplyResult{Outcome: store.Applied}
	}
	return i, named(batch[k], err), true, nil
}

// named prefixes a statement's error with its Name.
func named(st store.Stmt, err error) error {
	if st.Name == "" {
		return err
	}
	return fmt.Errorf("%s: %w", st.Name, err)
}
