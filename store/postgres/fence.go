package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/claimrule"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

// fenceWhere limits a fenced change to rows still in flight under the
// claim's token; the ? is the token. Comparing status with the empty string
// appended keeps the planner off the claim index, as the log lanes' marks
// do (settleSQL): on a table whose statistics predate its backlog (a
// queue's usual state) the planner took "status = 'in_flight'" for a
// handful of rows and read every in-flight entry of the claim index, dead
// ones included, into a hash join, instead of probing the primary key once
// per row: 22 against 11.5 ms for a batch of 1,000 beside 23,000 such
// entries, and growing with them (TestMarkPlans).
const fenceWhere = " AND t.lease_token = ? AND (t.status || '') = 'in_flight' RETURNING t.id"

// The fenced statements, before fenceWhere; {{T}} is the table.
var (
	completeHead = `UPDATE {{T}} t SET status = 'delivered', delivered_at = now(),
  available_at = now(), receipt = v.receipt
FROM unnest(?::bigint[], ?::text[]) AS v(id, receipt) WHERE t.id = v.id`
	retryHead = `UPDATE {{T}} t SET status = 'pending',
  available_at = now() + v.wait * interval '1 microsecond', last_error = v.error,
  attempt_errors = ` + appendAttemptError + `
FROM unnest(?::bigint[], ?::text[], ?::bigint[]) AS v(id, error, wait) WHERE t.id = v.id`
	killHead = `UPDATE {{T}} t SET status = 'dead', available_at = now(), last_error = v.error,
  attempt_errors = ` + appendAttemptError + `
FROM unnest(?::bigint[], ?::text[]) AS v(id, error) WHERE t.id = v.id`
	releaseHead = `UPDATE {{T}} t SET status = 'pending', available_at = now(),
  attempts = GREATEST(t.attempts - 1, 0) WHERE t.id = ANY(?)`
	discardHead = `DELETE FROM {{T}} t WHERE t.id = ANY(?)`
)

// Complete marks rows delivered, keeping each receipt. delivered_at and
// available_at both get now(): available_at then orders finished rows for
// retention on the done index.
func (s *Store) Complete(ctx context.Context, f store.Fence, ds []store.Delivery) ([]int64, error) {
	if t := s.mapped.Get(f.Table); t != nil {
		return t.Complete(ctx, f, ds)
	}
	ids := make([]int64, len(ds))
	receipts := make([]string, len(ds))
	for i, d := range ds {
		ids[i], receipts[i] = d.ID, d.Receipt.JSON()
	}
	return s.fenced(ctx, "complete", f, ids, completeHead, ids, receipts)
}

// Retry puts rows back to pending, due after each one's backoff.
func (s *Store) Retry(ctx context.Context, f store.Fence, fs []store.Failure) ([]int64, error) {
	if t := s.mapped.Get(f.Table); t != nil {
		return t.Retry(ctx, f, fs)
	}
	ids, errs, waits := failures(fs)
	return s.fenced(ctx, "retry", f, ids, retryHead, ids, errs, waits)
}

// Kill moves rows to dead, keeping the error; available_at records when.
func (s *Store) Kill(ctx context.Context, f store.Fence, fs []store.Failure) ([]int64, error) {
	if t := s.mapped.Get(f.Table); t != nil {
		return t.Kill(ctx, f, fs)
	}
	ids, errs, _ := failures(fs)
	return s.fenced(ctx, "kill", f, ids, killHead, ids, errs)
}

// appendAttemptError is attempt_errors with the failure v.error appended
// (sqlscan.DecodeAttemptErrors reads it), the oldest dropped once it holds
// store.MaxAttemptErrors: part of the failure's own UPDATE, so keeping the
// history costs no statement, and a delivery none at all.
var appendAttemptError = attemptErrorAppended("t.attempts", "v.error")

// attemptErrorAppended is t.attempt_errors with attempt number attempt and
// error text errText (SQL expressions) appended, bounded as
// appendAttemptError says. A value that is not an array (written by hand)
// starts the history afresh rather than failing the mark.
func attemptErrorAppended(attempt, errText string) string {
	return `CASE WHEN jsonb_typeof(t.attempt_errors) IS DISTINCT FROM 'array' THEN '[]'::jsonb
  WHEN jsonb_array_length(t.attempt_errors) >= ` + strconv.Itoa(store.MaxAttemptErrors) + ` THEN t.attempt_errors - 0
  ELSE t.attempt_errors END
  || jsonb_build_array(jsonb_build_object('n', ` + attempt + `,
    'at', floor(extract(epoch FROM now()) * 1000)::bigint, 'e', ` + errText + `))`
}

// Release puts rows back to pending at once, undoing the claim's attempt.
func (s *Store) Release(ctx context.Context, f store.Fence, ids []int64) ([]int64, error) {
	if t := s.mapped.Get(f.Table); t != nil {
		return t.Release(ctx, f, ids)
	}
	return s.fenced(ctx, "release", f, ids, releaseHead, ids)
}

// Discard deletes stale rows instead of publishing them.
func (s *Store) Discard(ctx context.Context, f store.Fence, ids []int64) ([]int64, error) {
	if t := s.mapped.Get(f.Table); t != nil {
		return t.Discard(ctx, f, ids)
	}
	return s.fenced(ctx, "discard", f, ids, discardHead, ids)
}

// fenced runs one statement (head, then the fence condition) that changes
// only rows still in flight under f.Token, and returns the ids of ids it
// did not change: their lease was lost. RETURNING names the changed rows,
// so one statement is the whole answer, and with its transaction's other
// statements it goes in one round trip (see oneTrip).
func (s *Store) fenced(ctx context.Context, op string, f store.Fence, ids []int64, head string, args ...any) ([]int64, error) {
	table, err := quote(f.Table)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	q := fencedQuery(head, table)
	args = append(args, f.Token)
	var done []int64
	bound := boundArg(s.bound.Get())
	err = s.statementTx(ctx, s.markSettings(), bound, q, args, func(rows sqlscan.Cursor) (err error) {
		done, err = sqlscan.ReadIDs(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres store: %s in %s: %w", op, f.Table, err)
	}
	return claimrule.Missing(ids, done), nil
}

// fencedQuery is the fenced statement head on table (quoted).
func fencedQuery(head, table string) string {
	return sqlbuild.Rebind(sqlbuild.ReplaceTable(head, table) + fenceWhere)
}

// failures splits fs into ids, trimmed error texts and backoffs in µs.
func failures(fs []store.Failure) (ids []int64, errs []string, waits []int64) {
	ids = make([]int64, len(fs))
	errs = make([]string, len(fs))
	waits = make([]int64, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
		errs[i] = sqlbuild.TrimError(f.Error)
		waits[i] = sqlbuild.Micros(max(f.RetryIn, 0))
	}
	return ids, errs, waits
}
