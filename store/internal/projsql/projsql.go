// Package projsql is the projection bookkeeping SQL shared by the sqlite,
// mysql and postgres stores: one algorithm, with the few expressions that
// differ (the clock, durations, insert-or-ignore, row locks) supplied by
// each store as a Dialect. A store embeds the Projections value New makes
// of its Dialect, once, when it is made: that value has the methods of
// store.ProjectionStore but MigrateProjections (each database's tables are
// its own). It stays inside store/, so no SQL leaks into the projector.
package projsql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqltx"
)

// Dialect is what a store tells the shared code about its database.
type Dialect struct {
	// Name prefixes errors ("postgres store").
	Name string
	// DB is the pool the bookkeeping lives in (the read model's database).
	DB *sql.DB
	// Begin opens the transaction of one apply or failure; release runs
	// after it ends (SQLite frees its in-process write slot there).
	Begin func(ctx context.Context) (tx *sql.Tx, release func(), err error)
	// Dollar rewrites ? placeholders to $n (PostgreSQL).
	Dollar bool
	// Quote quotes a validated identifier.
	Quote func(name string) string
	// Now is the database clock.
	Now string
	// NowPlus is the clock plus a duration bound to one ?; DurArg binds it.
	NowPlus string
	// CutoffPlus is NowPlus with a clock the planner can compare an index
	// with (fixed for the statement; PostgreSQL's clock_timestamp() is
	// volatile, so an index cannot bound a column by it). Empty: NowPlus.
	CutoffPlus string
	DurArg     func(time.Duration) any
	// DiffMS returns the expression for a - b in whole milliseconds.
	DiffMS func(a, b string) string
	// EpochMS returns the expression for a timestamp column in Unix ms.
	EpochMS func(col string) string
	// InsertIgnore is appended to an INSERT so that an existing key
	// changes nothing and reports 0 rows affected.
	InsertIgnore string
	// Duplicate, when set, reports a unique violation: the batch apply
	// then inserts its done rows with a plain INSERT and takes that error
	// to mean "not all new" (see insertDone).
	Duplicate func(error) bool
	// ForUpdate locks a selected row ("" where the transaction holds the
	// whole database, as on SQLite).
	ForUpdate string
	// Retryable reports a deadlock or serialization failure: the
	// transaction was lost and running it again is safe.
	Retryable func(error) bool
	// BeforeScan, when set, runs before an outbox scan with the quoted
	// projection table (PostgreSQL refreshes its planner statistics when
	// they are stale).
	BeforeScan func(ctx context.Context, table string)
	// Pipeline, when set, runs stmts as one READ COMMITTED transaction
	// without waiting for each statement's answer: BEGIN, stmts in order,
	// COMMIT, in one round trip. It returns -1 and nil once committed; the
	// index of the first statement the server refused and its error
	// (nothing committed); or -1 and an error when the transaction failed
	// otherwise (the connection, the commit). Used only with Duplicate.
	Pipeline func(ctx context.Context, stmts []store.Stmt) (failed int, err error)
	// Write, when set, runs the writes made outside a transaction of
	// Begin (ReplayProjection, CleanupProjection): SQLite's takes the
	// store's write slot around them. Nil runs them as they are.
	Write func(ctx context.Context, write func() error) error
}

// Projections is store.ProjectionStore but MigrateProjections, on one
// database. Its methods are named as the interface's, so a store that
// embeds it has them.
type Projections struct{ d *Dialect }

// New returns the bookkeeping of the database d describes; d's functions
// must all be set but Duplicate and Write, which are optional.
func New(d Dialect) Projections { return Projections{d: &d} }

// write runs fn through the dialect's Write hook, if it has one.
func (d *Dialect) write(ctx context.Context, fn func() error) error {
	if d.Write == nil {
		return fn()
	}
	return d.Write(ctx, fn)
}

func (d *Dialect) q(query string) string {
	if d.Dollar {
		return sqlbuild.Rebind(query)
	}
	return query
}

// table validates and quotes a table name.
func (d *Dialect) table(name string) (string, error) {
	if err := herald.ValidateIdentifier(name); err != nil {
		return "", fmt.Errorf("%s: projection table: %w", d.Name, err)
	}
	return d.Quote(name), nil
}

const keyWhere = " WHERE projection = ? AND tenant = ? AND event_id = ?"

func keyArgs(k store.ProjectionKey) []any { return []any{k.Projection, k.Tenant, k.EventID} }

// maxTries bounds the reruns of a transaction lost to a deadlock.
const maxTries = 5

// Apply implements store.ProjectionStore.Apply.
func (pr Projections) Apply(ctx context.Context, p store.ApplyParams, fn func(tx *sql.Tx) error) (store.ApplyResult, error) {
	d := pr.d
	t, err := d.table(p.Table)
	if err != nil {
		return store.ApplyResult{}, err
	}
	if p.Lease <= 0 {
		return store.ApplyResult{}, fmt.Errorf("%s: apply: lease %v must be positive", d.Name, p.Lease)
	}
	var res store.ApplyResult
	err = sqltx.Retry(ctx, d.Retryable, func() error {
		res, err = d.applyOnce(ctx, t, p, fn)
		return err
	})
	return res, err
}

func (d *Dialect) applyOnce(ctx context.Context, t string, p store.ApplyParams, fn func(tx *sql.Tx) error) (store.ApplyResult, error) {
	tx, release, err := d.Begin(ctx)
	if err != nil {
		return store.ApplyResult{}, fmt.Errorf("%s: apply: %w", d.Name, err)
	}
	defer release()
	res, err := d.claim(ctx, tx, t, p)
	if err != nil || res.Outcome != store.Applied {
		_ = tx.Rollback()
		if err != nil {
			return res, fmt.Errorf("%s: claim %s/%s: %w", d.Name, p.Projection, p.EventID, err)
		}
		return res, nil
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		res.Outcome = store.HandlerFailed
		return res, handlerError(err)
	}
	if _, err := tx.ExecContext(ctx, d.q("UPDATE "+t+" SET state = 'done', lease_until = NULL, next_attempt_at = NULL, "+
		"last_error = '', payload = NULL, updated_at = "+d.Now+keyWhere), keyArgs(p.ProjectionKey)...); err != nil {
		_ = tx.Rollback()
		return res, fmt.Errorf("%s: mark done: %w", d.Name, err)
	}
	if err := tx.Commit(); err != nil {
		// A commit can fail for the handler's own writes (a deferred
		// constraint), so it counts as a failed attempt unless retryable.
		res.Outcome = store.HandlerFailed
		if d.Retryable(err) {
			return res, err
		}
		return res, handlerError(fmt.Errorf("commit: %w", err))
	}
	return res, nil
}

// ApplyBatch implements store.ProjectionStore.ApplyBatch.
func (pr Projections) ApplyBatch(ctx context.Context, ps []store.ApplyParams, fn func(tx *sql.Tx, i int) error) ([]store.ApplyResult, error) {
	d := pr.d
	return d.applyBatch(ctx, ps, func(tables []string, ps []store.ApplyParams, res []store.ApplyResult) (int, error, error) {
		return d.applyPrefix(ctx, tables, ps, fn, res)
	})
}

// prefixFunc applies ps in one transaction, stopping at the first handler
// failure, as applyPrefix does.
type prefixFunc func(tables []string, ps []store.ApplyParams, res []store.ApplyResult) (failed int, herr error, err error)

// applyBatch runs prefix on ps, then (after a handler failure) on the
// items before the failing one, which the failure rolled back, until a
// prefix commits.
func (d *Dialect) applyBatch(ctx context.Context, ps []store.ApplyParams, prefix prefixFunc) ([]store.ApplyResult, error) {
	tables := make([]string, len(ps))
	for i, p := range ps {
		t, err := d.table(p.Table)
		if err != nil {
			return nil, err
		}
		if p.Lease <= 0 {
			return nil, fmt.Errorf("%s: apply: lease %v must be positive", d.Name, p.Lease)
		}
		tables[i] = t
	}
	res := make([]store.ApplyResult, len(ps))
	for n := len(ps); n > 0; {
		var (
			failed int
			herr   error
		)
		err := sqltx.Retry(ctx, d.Retryable, func() (err error) {
			failed, herr, err = prefix(tables[:n], ps[:n], res)
			return err
		})
		if err != nil {
			return nil, err
		}
		if failed < 0 {
			break
		}
		// The items before the failure were rolled back with it: run them
		// again; the items after it are not run.
		res[failed] = store.ApplyResult{Outcome: store.HandlerFailed, Attempts: res[failed].Attempts, Err: handlerError(herr)}
		for j := failed + 1; j < n; j++ {
			res[j] = store.ApplyResult{}
		}
		n = failed
	}
	return res, nil
}

// applyPrefix applies ps in one transaction, stopping at the first
// handler failure: then it rolls back and reports the failing index and
// error (failed < 0: all committed). No savepoints: failures are rare, and
// a savepoint costs two round trips per event on every batch.
func (d *Dialect) applyPrefix(ctx context.Context, tables []string, ps []store.ApplyParams,
	fn func(tx *sql.Tx, i int) error, res []store.ApplyResult) (failed int, herr error, err error) {
	if failed, herr, done, err := d.applyNew(ctx, tables, ps, fn, res); done || err != nil {
		return failed, herr, err
	}
	return d.applyEach(ctx, tables, ps, fn, res)
}

// applyEach is applyPrefix event by event: each row claimed (inserted, or
// read under a lock and taken over when due), the handler run, the row
// marked done; one commit.
func (d *Dialect) applyEach(ctx context.Context, tables []string, ps []store.ApplyParams,
	fn func(tx *sql.Tx, i int) error, res []store.ApplyResult) (failed int, herr error, err error) {
	tx, release, err := d.Begin(ctx)
	if err != nil {
		return -1, nil, fmt.Errorf("%s: apply batch: %w", d.Name, err)
	}
	defer release()
	for i, p := range ps {
		r, err := d.claim(ctx, tx, tables[i], p)
		if err != nil {
			_ = tx.Rollback()
			return -1, nil, fmt.Errorf("%s: claim %s/%s: %w", d.Name, p.Projection, p.EventID, err)
		}
		res[i] = r
		if r.Outcome != store.Applied {
			continue
		}
		if err := fn(tx, i); err != nil {
			_ = tx.Rollback()
			if d.Retryable(err) {
				return -1, nil, err
			}
			return i, err, nil
		}
		if _, err := tx.ExecContext(ctx, d.q("UPDATE "+tables[i]+" SET state = 'done', lease_until = NULL, "+
			"next_attempt_at = NULL, last_error = '', payload = NULL, updated_at = "+d.Now+keyWhere),
			keyArgs(p.ProjectionKey)...); err != nil {
			_ = tx.Rollback()
			return -1, nil, fmt.Errorf("%s: mark done: %w", d.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return -1, nil, fmt.Errorf("%s: apply batch: commit: %w", d.Name, err)
	}
	return -1, nil, nil
}

// handlerError wraps err as a handler failure, keeping a retryable error
// visible to Retry (a deadlock inside the handler reruns the transaction).
func handlerError(err error) error { return fmt.Errorf("%w: %w", store.ErrHandler, err) }

// claim takes p's row inside tx. The INSERT is the claim for a new event;
// when the row exists (or another transaction is inserting it, in which
// case the INSERT waits for that one to end) the row is read under a lock
// and taken over only if failed and due, or processing with an expired lease.
func (d *Dialect) claim(ctx context.Context, tx *sql.Tx, t string, p store.ApplyParams) (store.ApplyResult, error) {
	r, err := tx.ExecContext(ctx, d.q("INSERT INTO "+t+" (projection, tenant, event_id, state, lease_until, created_at, updated_at) "+
		"VALUES (?, ?, ?, 'processing', "+d.NowPlus+", "+d.Now+", "+d.Now+")"+d.InsertIgnore),
		p.Projection, p.Tenant, p.EventID, d.DurArg(p.Lease))
	if err != nil {
		return store.ApplyResult{}, err
	}
	if n, err := r.RowsAffected(); err != nil {
		return store.ApplyResult{}, err
	} else if n == 1 {
		return store.ApplyResult{Outcome: store.Applied}, nil
	}
	var (
		state         string
		attempts      int
		due, leaseEnd sql.NullInt64
	)
	err = tx.QueryRowContext(ctx, d.q("SELECT state, attempts, "+d.DiffMS("next_attempt_at", d.Now)+", "+
		d.DiffMS("lease_until", d.Now)+" FROM "+t+keyWhere+d.ForUpdate), keyArgs(p.ProjectionKey)...).
		Scan(&state, &attempts, &due, &leaseEnd)
	if err != nil {
		return store.ApplyResult{}, err
	}
	res := store.ApplyResult{State: store.ProjectionState(state), Attempts: attempts}
	switch res.State {
	case store.ProjectionDone, store.ProjectionDead:
		res.Outcome = store.Finished
		return res, nil
	case store.ProjectionFailed:
		if due.Int64 > 0 {
			res.Outcome, res.Wait = store.NotDue, time.Duration(due.Int64)*time.Millisecond
			return res, nil
		}
	case store.ProjectionProcessing:
		if leaseEnd.Int64 > 0 {
			res.Outcome, res.Wait = store.Busy, time.Duration(leaseEnd.Int64)*time.Millisecond
			return res, nil
		}
	}
	_, err = tx.ExecContext(ctx, d.q("UPDATE "+t+" SET state = 'processing', lease_until = "+d.NowPlus+
		", updated_at = "+d.Now+keyWhere), append([]any{d.DurArg(p.Lease)}, keyArgs(p.ProjectionKey)...)...)
	if err != nil {
		return store.ApplyResult{}, err
	}
	res.Outcome, res.State = store.Applied, ""
	return res, nil
}

// Fail implements store.ProjectionStore.Fail.
func (pr Projections) Fail(ctx context.Context, f store.ProjectionFailure) (store.ProjectionState, int, error) {
	d := pr.d
	t, err := d.table(f.Table)
	if err != nil {
		return "", 0, err
	}
	var (
		state    store.ProjectionState
		attempts int
	)
	err = sqltx.Retry(ctx, d.Retryable, func() error {
		state, attempts, err = d.failOnce(ctx, t, f)
		return err
	})
	if err != nil {
		return "", 0, fmt.Errorf("%s: record failure of %s/%s: %w", d.Name, f.Projection, f.EventID, err)
	}
	return state, attempts, nil
}

func (d *Dialect) failOnce(ctx context.Context, t string, f store.ProjectionFailure) (store.ProjectionState, int, error) {
	tx, release, err := d.Begin(ctx)
	if err != nil {
		return "", 0, err
	}
	defer release()
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, d.q("INSERT INTO "+t+" (projection, tenant, event_id, state, created_at, updated_at) "+
		"VALUES (?, ?, ?, 'failed', "+d.Now+", "+d.Now+")"+d.InsertIgnore), keyArgs(f.ProjectionKey)...); err != nil {
		return "", 0, err
	}
	var (
		state    string
		attempts int
	)
	if err := tx.QueryRowContext(ctx, d.q("SELECT state, attempts FROM "+t+keyWhere+d.ForUpdate),
		keyArgs(f.ProjectionKey)...).Scan(&state, &attempts); err != nil {
		return "", 0, err
	}
	if st := store.ProjectionState(state); st == store.ProjectionDone || st == store.ProjectionDead {
		return st, attempts, tx.Commit()
	}
	attempts++
	next := store.ProjectionFailed
	if f.Permanent || (f.MaxAttempts > 0 && attempts >= f.MaxAttempts) {
		next = store.ProjectionDead
	}
	headers, err := encodeHeaders(f.Event.Headers)
	if err != nil {
		return "", 0, err
	}
	payload := f.Event.Payload
	if payload == nil {
		payload = []byte{}
	}
	_, err = tx.ExecContext(ctx, d.q("UPDATE "+t+" SET state = ?, attempts = ?, last_error = ?, lease_until = NULL, "+
		"next_attempt_at = "+d.NowPlus+", updated_at = "+d.Now+
		", event_type = ?, topic = ?, partition_key = ?, headers = ?, payload = ?"+keyWhere),
		append([]any{string(next), attempts, sqlbuild.TrimError(f.Error), d.DurArg(max(f.RetryIn, 0)),
			f.Event.Type, f.Event.Topic, f.Event.PartitionKey, headers, payload}, keyArgs(f.ProjectionKey)...)...)
	if err != nil {
		return "", 0, err
	}
	return next, attempts, tx.Commit()
}

// inTx runs fn in a transaction from Begin, retrying lost deadlocks.
func (d *Dialect) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return sqltx.Retry(ctx, d.Retryable, func() error {
		tx, release, err := d.Begin(ctx)
		if err != nil {
			return err
		}
		defer release()
		if err := fn(tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}

// errorsJoin names the operation in err.
func (d *Dialect) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %s: %w", d.Name, op, err)
}

// marks returns n placeholders.
func marks(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }
