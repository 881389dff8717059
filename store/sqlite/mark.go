package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/heraldhq/herald/store"
)

// The marks after a publish are each one statement for the whole batch: the
// batch travels as one JSON array parameter (json_each), so the SQL text is
// fixed whatever the batch size. Each statement changes only rows still
// in flight under the claim's token and returns the ids it changed; the rest
// are reported lost.

// fenced is the condition every mark adds: the row is still ours.
const fenced = ` AND o.lease_token = ? AND o.status = 'in_flight'`

// Complete marks rows delivered, keeping each receipt.
func (s *Store) Complete(ctx context.Context, f store.Fence, ds []store.Delivery) ([]int64, error) {
	if t := s.mapped.Get(f.Table); t != nil {
		return t.Complete(ctx, f, ds)
	}
	if len(ds) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(ds))
	items := make([][2]any, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
		items[i] = [2]any{d.ID, d.Receipt.JSON()}
	}
	return s.mark(ctx, "complete", f, ids, items, `UPDATE {{T}} AS o SET status = 'delivered',
	delivered_at = `+now+`, updated_at = `+now+`, receipt = j.value ->> 1
FROM json_each(?) AS j WHERE o.id = j.value ->> 0`+fenced+` RETURNING id`)
}

// Retry puts rows back to pending, claimable again after each RetryIn.
func (s *Store) Retry(ctx context.Context, f store.Fence, fs []store.Failure) ([]int64, error) {
	if t := s.mapped.Get(f.Table); t != nil {
		return t.Retry(ctx, f, fs)
	}
	ids, items := failures(fs)
	return s.mark(ctx, "retry", f, ids, items, `UPDATE {{T}} AS o SET status = 'pending',
	available_at = `+now+` + (j.value ->> 2), updated_at = `+now+`, last_error = j.value ->> 1,
	attempt_errors = `+appendAttemptError+`
FROM json_each(?) AS j WHERE o.id = j.value ->> 0`+fenced+` RETURNING id`)
}

// Kill moves rows to dead, keeping the (trimmed) error for an operator.
func (s *Store) Kill(ctx context.Context, f store.Fence, fs []store.Failure) ([]int64, error) {
	if t := s.mapped.Get(f.Table); t != nil {
		return t.Kill(ctx, f, fs)
	}
	ids, items := failures(fs)
	return s.mark(ctx, "kill", f, ids, items, `UPDATE {{T}} AS o SET status = 'dead',
	updated_at = `+now+`, last_error = j.value ->> 1, attempt_errors = `+appendAttemptError+`
FROM json_each(?) AS j WHERE o.id = j.value ->> 0`+fenced+` RETURNING id`)
}

// appendAttemptError is attempt_errors with the failure of the batch item
// j appended (sqlscan.DecodeAttemptErrors reads it), the oldest dropped
// once it holds store.MaxAttemptErrors: part of the failure's own UPDATE,
// so keeping the history costs no statement, and a delivery none at all.
// A value that is not a JSON array (written by hand) starts the history
// afresh rather than failing the mark (nested CASEs: SQLite does not
// promise to stop at the first false term of an AND).
var appendAttemptError = `json_insert(CASE WHEN json_array_length(` + priorAttempts + `) >= ` +
	strconv.Itoa(store.MaxAttemptErrors) + ` THEN json_remove(` + priorAttempts + `, '$[0]')
	ELSE ` + priorAttempts + ` END,
	'$[#]', json_object('n', o.attempts, 'at', ` + now + `, 'e', j.value ->> 1))`

// priorAttempts is the row's attempt_errors when it is a JSON array, else
// an empty one.
const priorAttempts = `COALESCE(CASE WHEN json_valid(o.attempt_errors) THEN
	CASE WHEN json_type(o.attempt_errors) = 'array' THEN o.attempt_errors END END, '[]')`

// Release puts rows back to pending at once and takes back the claim's attempt.
func (s *Store) Release(ctx context.Context, f store.Fence, ids []int64) ([]int64, error) {
	if t := s.mapped.Get(f.Table); t != nil {
		return t.Release(ctx, f, ids)
	}
	return s.mark(ctx, "release", f, ids, ids, `UPDATE {{T}} AS o SET status = 'pending',
	attempts = MAX(attempts - 1, 0), available_at = `+now+`, updated_at = `+now+`
WHERE o.id IN (SELECT value FROM json_each(?))`+fenced+` RETURNING id`)
}

// Discard deletes stale rows instead of publishing them.
func (s *Store) Discard(ctx context.Context, f store.Fence, ids []int64) ([]int64, error) {
	if t := s.mapped.Get(f.Table); t != nil {
		return t.Discard(ctx, f, ids)
	}
	return s.mark(ctx, "discard", f, ids, ids, `DELETE FROM {{T}} AS o
WHERE o.id IN (SELECT value FROM json_each(?))`+fenced+` RETURNING id`)
}

func failures(fs []store.Failure) ([]int64, [][3]any) {
	ids := make([]int64, len(fs))
	items := make([][3]any, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
		items[i] = [3]any{f.ID, trimError(f.Error), f.RetryIn.Milliseconds()}
	}
	return ids, items
}

// mark runs one fenced batch statement; items is JSON-encoded into its first
// parameter. It returns the ids of ids that the statement did not change.
func (s *Store) mark(ctx context.Context, op string, f store.Fence, ids []int64, items any, tmpl string) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	qt, err := quote(f.Table)
	if err != nil {
		return nil, err
	}
	batch, err := json.Marshal(items)
	if err != nil {
		return nil, wrap(op, f.Table, err)
	}
	query := replaceTable(tmpl, qt)
	changed := make(map[int64]bool, len(ids))
	err = s.hotWrite(ctx, func(db *sql.DB, stmts *stmtCache) error {
		clear(changed)
		rows, err := stmts.query(ctx, db, query, string(batch), f.Token)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			changed[id] = true
		}
		return rows.Err()
	})
	if err != nil {
		return nil, wrap(op, f.Table, err)
	}
	var lost []int64
	for _, id := range ids {
		if !changed[id] {
			lost = append(lost, id)
		}
	}
	return lost, nil
}

// trimError cuts msg to store.MaxErrorLength bytes on a rune boundary.
func trimError(msg string) string {
	if len(msg) <= store.MaxErrorLength {
		return msg
	}
	cut := store.MaxErrorLength
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut]
}
