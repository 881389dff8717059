package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlmaint"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

// Compile-time proof that Store is a store.Store.
var _ store.Store = (*Store)(nil)

// DefaultCleanupLimit bounds a cleanup round per state when
// CleanupParams.Limit is 0.
const DefaultCleanupLimit = sqlmaint.DefaultCleanupLimit

// maintenanceDialect is the upkeep SQL's view of this store (Cleanup,
// TryLock), made once by New: each statement runs in the write slot
// (exec). TryLock is one conditional upsert, atomic under SQLite's single
// writer. Cleanup takes delivered and dead rows by their last change (for
// delivered rows, delivered_at), pending rows by created_at.
func (s *Store) maintenanceDialect() sqlmaint.Dialect {
	return sqlmaint.Dialect{
		Name:   "sqlite",
		Quote:  quote,
		Scope:  func(sc store.Scope) (string, []any) { return scopeFilter("o", sc) },
		Delete: cleanupSQL,
		Age:    func(d time.Duration) any { return d.Milliseconds() },
		Lock: func(name string, interval time.Duration) []sqlmaint.Statement {
			return []sqlmaint.Statement{{SQL: `INSERT INTO herald_locks (name, until) VALUES (?, ` + now + ` + ?)
ON CONFLICT (name) DO UPDATE SET until = excluded.until WHERE herald_locks.until <= ` + now,
				Args: []any{name, interval.Milliseconds()}}}
		},
		Exec: s.exec,
		Wrap: wrap,
	}
}

// cleanupSQL is one cleanup round's statement. The repeated status IN
// terms let SQLite use the partial indexes. Finished rows come off the done
// index oldest first, without a sort; pending rows are few, and INDEXED BY
// keeps SQLite from scanning the whole table for them.
func cleanupSQL(table, qt string, r sqlmaint.Round, filter string) string {
	from, cond := qt+` o`, `o.status IN ('delivered', 'dead') AND o.status = 'delivered' AND o.updated_at`
	switch r {
	case sqlmaint.Dead:
		cond = `o.status IN ('delivered', 'dead') AND o.status = 'dead' AND o.updated_at`
	case sqlmaint.Pending:
		from = qt + ` o INDEXED BY "` + table + `_claim"`
		cond = `o.status IN ('pending', 'in_flight') AND o.status = 'pending' AND o.created_at`
	}
	return `DELETE FROM ` + qt + ` WHERE id IN (SELECT o.id FROM ` + from + ` WHERE ` + cond +
		` < ` + now + ` - ?` + filter + ` LIMIT ?)`
}

// exec runs a write statement in the write slot and returns rows affected.
func (s *Store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := s.write(ctx, func() error {
		res, err := s.db.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// Stats counts the scope's rows by state in one plain read.
func (s *Store) Stats(ctx context.Context, sc store.Scope) (store.LaneStats, error) {
	if t := s.mapped.Get(sc.Table); t != nil {
		return t.Stats(ctx, sc)
	}
	var st store.LaneStats
	qt, err := quote(sc.Table)
	if err != nil {
		return st, err
	}
	filter, args := scopeFilter("o", sc)
	rows, err := s.db.QueryContext(ctx, `SELECT o.status, o.attempts > 0, count(*),
	`+now+` - min(o.available_at) FROM `+qt+` o WHERE 1 = 1`+filter+` GROUP BY 1, 2`, args...)
	if err != nil {
		return st, wrap("stats", sc.Table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			status  string
			retried bool
			n, age  int64
		)
		if err := rows.Scan(&status, &retried, &n, &age); err != nil {
			return st, wrap("stats", sc.Table, err)
		}
		sqlscan.AddStat(&st, store.Status(status), retried, n, time.Duration(age)*time.Millisecond)
	}
	return st, wrap("stats", sc.Table, rows.Err())
}

// Unselected counts the unfinished rows of within that none of lanes
// selects, in one plain read.
func (s *Store) Unselected(ctx context.Context, within store.Scope, lanes []store.Scope) (int64, error) {
	if t := s.mapped.Get(within.Table); t != nil {
		return t.Unselected(ctx, within, lanes)
	}
	qt, err := quote(within.Table)
	if err != nil {
		return 0, err
	}
	cond, args, err := sqlbuild.UnselectedWhere(within, lanes, "o")
	if err != nil {
		return 0, fmt.Errorf("sqlite: %w", err)
	}
	var n int64
	err = s.db.QueryRowContext(ctx, `SELECT count(*) FROM `+qt+` o WHERE o.status IN ('pending', 'in_flight')`+
		cond, args...).Scan(&n)
	return n, wrap("unselected", within.Table, err)
}

// DefaultListLimit is the page size of List when ListParams.Limit is 0.
const DefaultListLimit = 100

// List returns up to p.Limit rows of p.Status with ids above p.AfterID,
// in id order (a mapped table's by event id, after p.AfterEventID).
func (s *Store) List(ctx context.Context, p store.ListParams) ([]store.Record, error) {
	if t := s.mapped.Get(p.Table); t != nil {
		return t.List(ctx, p, DefaultListLimit)
	}
	qt, err := quote(p.Table)
	if err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	filter, fargs := scopeFilter("o", p.Scope)
	args := append(append([]any{string(p.Status), p.AfterID}, fargs...), limit)
	recs, err := queryRecords(ctx, s.db, `SELECT `+columns+` FROM `+qt+` o
WHERE o.status = ? AND o.id > ?`+filter+` ORDER BY o.id LIMIT ?`, args...)
	return recs, wrap("list", p.Table, err)
}

// Get returns the row of eventID with its attempt errors, or
// store.ErrNotFound.
func (s *Store) Get(ctx context.Context, table, eventID string) (store.Record, error) {
	if t := s.mapped.Get(table); t != nil {
		return t.Get(ctx, eventID)
	}
	qt, err := quote(table)
	if err != nil {
		return store.Record{}, err
	}
	var attemptErrors sql.NullString
	r, err := scanRecord(s.db.QueryRowContext(ctx, `SELECT `+columns+`, attempt_errors FROM `+qt+` WHERE event_id = ?`,
		eventID), &attemptErrors)
	r.Errors = sqlscan.DecodeAttemptErrors(attemptErrors.String)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("sqlite: get %s %q: %w", table, eventID, store.ErrNotFound)
	}
	return r, wrap("get", table, err)
}

// Replay moves dead rows back to pending, claimable at once, with attempts
// reset. last_error is kept, so an operator still sees why the event died
// until it fails again or is delivered.
func (s *Store) Replay(ctx context.Context, sc store.Scope, eventIDs []string) (int64, error) {
	if t := s.mapped.Get(sc.Table); t != nil {
		return t.Replay(ctx, sc, eventIDs)
	}
	return s.onDead(ctx, "replay", sc, eventIDs, `UPDATE {{T}} AS o SET status = 'pending', attempts = 0,
	available_at = `+now+`, updated_at = `+now)
}

// Purge deletes dead rows.
func (s *Store) Purge(ctx context.Context, sc store.Scope, eventIDs []string) (int64, error) {
	if t := s.mapped.Get(sc.Table); t != nil {
		return t.Purge(ctx, sc, eventIDs)
	}
	return s.onDead(ctx, "purge", sc, eventIDs, `DELETE FROM {{T}} AS o`)
}

// onDead runs head on the scope's dead rows, or only those of eventIDs.
func (s *Store) onDead(ctx context.Context, op string, sc store.Scope, eventIDs []string, head string) (int64, error) {
	qt, err := quote(sc.Table)
	if err != nil {
		return 0, err
	}
	filter, args := scopeFilter("o", sc)
	query := replaceTable(head, qt) + ` WHERE o.status = 'dead'` + filter
	if len(eventIDs) > 0 {
		ids, err := json.Marshal(eventIDs)
		if err != nil {
			return 0, wrap(op, sc.Table, err)
		}
		query += ` AND o.event_id IN (SELECT value FROM json_each(?))`
		args = append(args, string(ids))
	}
	n, err := s.exec(ctx, query, args...)
	return n, wrap(op, sc.Table, err)
}
