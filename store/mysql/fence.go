package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/claimrule"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqltx"
)

// Complete marks rows delivered, keeping each receipt. available_at gets
// the database's now: it orders delivered rows for retention on the same
// index as the claim, and it is what the virtual delivered_at shows
// (schema version 3). The receipt goes into receipt_padded padded to its
// default's size, so that the row is rewritten in place (see
// migrations/outbox_0003_fixed_marks.sql).
func (s *Store) Complete(ctx context.Context, f store.Fence, ds []store.Delivery) ([]int64, error) {
	if t := s.mappedTable(f.Table); t != nil {
		return t.Complete(ctx, f, ds)
	}
	ids := make([]int64, len(ds))
	receipts := make([]any, len(ds))
	for i, d := range ds {
		ids[i], receipts[i] = d.ID, padReceipt(d.Receipt.JSON())
	}
	set, args := perRow("receipt_padded", ids, receipts)
	return s.fenced(ctx, "complete", f, ids, store.StatusDelivered,
		"status = 'delivered', available_at = UTC_TIMESTAMP(6), "+set, args)
}

// ReceiptWidth is the size in bytes of receipt_padded's default (64
// spaces): a receipt padded to it replaces the default in place.
const ReceiptWidth = 64

// OwnerWidth is the size in bytes of lease_owner's default (64 spaces,
// schema version 4): an owner padded to it replaces the default in place.
const OwnerWidth = 64

// padReceipt pads a receipt with spaces to ReceiptWidth bytes; longer ones
// are returned as they are.
func padReceipt(r string) string { return padTo(r, ReceiptWidth) }

// padTo pads s with spaces to width bytes; longer ones are returned as
// they are. The table's collation (utf8mb4_bin) pads with spaces when it
// compares, so a padded value still equals the unpadded one in SQL.
func padTo(s string, width int) string {
	if len(s) >= width {
		return s
	}
	return s + strings.Repeat(" ", width-len(s))
}

// Retry puts rows back to pending, due after each one's backoff.
func (s *Store) Retry(ctx context.Context, f store.Fence, fs []store.Failure) ([]int64, error) {
	if t := s.mappedTable(f.Table); t != nil {
		return t.Retry(ctx, f, fs)
	}
	ids, errs, backoffs := failures(fs)
	errSet, errArgs := failureSet(ids, errs)
	waitExpr, waitArgs := perRowExpr(ids, backoffs)
	return s.fenced(ctx, "retry", f, ids, store.StatusPending,
		"status = 'pending', available_at = UTC_TIMESTAMP(6) + INTERVAL "+waitExpr+" MICROSECOND, "+errSet,
		append(waitArgs, errArgs...))
}

// Kill moves rows to dead, keeping the error; available_at records when.
func (s *Store) Kill(ctx context.Context, f store.Fence, fs []store.Failure) ([]int64, error) {
	if t := s.mappedTable(f.Table); t != nil {
		return t.Kill(ctx, f, fs)
	}
	ids, errs, _ := failures(fs)
	set, args := failureSet(ids, errs)
	return s.fenced(ctx, "kill", f, ids, store.StatusDead, "status = 'dead', available_at = UTC_TIMESTAMP(6), "+set, args)
}

// failureSet returns the SET terms of a failure mark and their arguments:
// last_error, and attempt_errors with the failure appended
// (sqlscan.DecodeAttemptErrors reads it), the oldest dropped once it holds
// store.MaxAttemptErrors. Part of the failure's own UPDATE, so keeping the
// history costs no statement, and a delivery none at all. The error's
// expression is repeated rather than read back from last_error: whether a
// SET term sees an earlier term's new value differs between MySQL and
// MariaDB's SIMULTANEOUS_ASSIGNMENT mode.
func failureSet(ids []int64, errs []any) (string, []any) {
	expr, args := perRowExpr(ids, errs)
	return "last_error = " + expr + ", attempt_errors = " + AttemptErrorAppended(expr), append(append([]any{}, args...), args...)
}

// AttemptErrorAppended is attempt_errors with a failure appended (the row's
// attempts as its number, errText an SQL expression for its text), bounded
// to store.MaxAttemptErrors, oldest dropped; a value that is not a JSON
// array (written by hand) starts the history afresh rather than failing
// the mark. Log lanes (store/mysql/binlog) append with it too.
func AttemptErrorAppended(errText string) string {
	const prior = "COALESCE(CASE WHEN JSON_VALID(attempt_errors) THEN " +
		"CASE WHEN JSON_TYPE(attempt_errors) = 'ARRAY' THEN attempt_errors END END, '[]')"
	return "JSON_ARRAY_APPEND(IF(JSON_LENGTH(" + prior + ") >= " + strconv.Itoa(store.MaxAttemptErrors) +
		", JSON_REMOVE(" + prior + ", '$[0]'), " + prior + "), '$', JSON_OBJECT('n', attempts, " +
		"'at', TIMESTAMPDIFF(MICROSECOND, '1970-01-01', UTC_TIMESTAMP(6)) DIV 1000, 'e', " + errText + "))"
}

// Release puts rows back to pending at once, undoing the claim's attempt.
func (s *Store) Release(ctx context.Context, f store.Fence, ids []int64) ([]int64, error) {
	if t := s.mappedTable(f.Table); t != nil {
		return t.Release(ctx, f, ids)
	}
	return s.fenced(ctx, "release", f, ids, store.StatusPending,
		"status = 'pending', available_at = UTC_TIMESTAMP(6), attempts = GREATEST(attempts - 1, 0)", nil)
}

// Discard deletes stale rows instead of publishing them.
func (s *Store) Discard(ctx context.Context, f store.Fence, ids []int64) ([]int64, error) {
	if t := s.mappedTable(f.Table); t != nil {
		return t.Discard(ctx, f, ids)
	}
	return s.fenced(ctx, "discard", f, ids, "", "", nil)
}

// fenced changes the rows of ids that are still in flight under f.Token
// (SET set, or DELETE when set is empty) and returns the others: their lease
// was lost. It is one autocommit statement that looks rows up by primary
// key, which takes record locks only, no gap locks, at any isolation level. Only when fewer rows changed than asked (a lease was
// lost, which is rare) does a second read find out which: the rows now in
// target under the token are this call's. A row this call moved back to
// pending and that another worker claimed in between reads as lost, which
// is what it is by then.
func (s *Store) fenced(ctx context.Context, op string, f store.Fence, ids []int64, target store.Status, set string, setArgs []any) ([]int64, error) {
	table, err := quote(f.Table)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	// FORCE INDEX (PRIMARY): left alone, the optimizer may walk the status
	// range of a secondary index instead, and at the session's default
	// REPEATABLE READ that takes gap locks which deadlock with claims.
	// (The multi-table DELETE form is the one that takes an index hint.)
	where := " WHERE id IN (" + sqlbuild.Marks(len(ids)) + ") AND lease_token = ? AND status = 'in_flight'"
	q := "UPDATE " + table + " FORCE INDEX (PRIMARY) SET " + set + where
	if set == "" {
		q = "DELETE o FROM " + table + " AS o FORCE INDEX (PRIMARY)" + where
	}
	args := append(append(setArgs, sqlbuild.Int64Args(ids)...), f.Token)
	var lost []int64
	err = retryLoop(ctx, func() error {
		res, err := s.db.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		switch {
		case err != nil:
			return err
		case int(n) == len(ids):
			lost = nil
		case len(ids) == 1:
			lost = ids
		default:
			lost, err = changed(ctx, s.db, table, ids, f.Token, target)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mysql store: %s in %s: %w", op, f.Table, err)
	}
	return lost, nil
}

// changed returns the ids the fenced statement did not change: for an
// update, those not now in target under token; for a delete, those still there.
func changed(ctx context.Context, db *sql.DB, table string, ids []int64, token int64, target store.Status) ([]int64, error) {
	q := "SELECT id FROM " + table + " WHERE id IN (" + sqlbuild.Marks(len(ids)) + ")"
	args := sqlbuild.Int64Args(ids)
	if target != "" {
		q += " AND lease_token = ? AND status = ?"
		args = append(args, token, string(target))
	}
	found, err := queryIDs(ctx, db, q, args)
	if err != nil {
		return nil, err
	}
	if target == "" {
		return found, nil // rows still present were not ours to delete
	}
	return claimrule.Missing(ids, found), nil
}

// perRow returns "col = <value per id>" and its arguments: a plain
// placeholder when every row gets the same value, else a CASE on id.
func perRow(col string, ids []int64, values []any) (string, []any) {
	expr, args := perRowExpr(ids, values)
	return col + " = " + expr, args
}

// perRowExpr returns an expression worth values[i] for row ids[i].
func perRowExpr(ids []int64, values []any) (string, []any) {
	if len(values) == 0 {
		return "NULL", nil
	}
	same := true
	for _, v := range values[1:] {
		if v != values[0] {
			same = false
			break
		}
	}
	if same {
		return "?", []any{values[0]}
	}
	var b strings.Builder
	args := make([]any, 0, 2*len(ids))
	b.WriteString("CASE id")
	for i, id := range ids {
		b.WriteString(" WHEN ? THEN ?")
		args = append(args, id, values[i])
	}
	b.WriteString(" END")
	return b.String(), args
}

// failures splits fs into ids, trimmed error texts and backoffs in µs.
func failures(fs []store.Failure) (ids []int64, errs, backoffs []any) {
	ids = make([]int64, len(fs))
	errs = make([]any, len(fs))
	backoffs = make([]any, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
		errs[i] = sqlbuild.TrimError(f.Error)
		backoffs[i] = sqlbuild.Micros(max(f.RetryIn, 0))
	}
	return ids, errs, backoffs
}

func retryLoop(ctx context.Context, f func() error) error { return sqltx.Retry(ctx, retryable, f) }
