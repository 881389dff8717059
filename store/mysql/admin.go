package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlmaint"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

// DefaultCleanupLimit bounds a cleanup round per state when
// CleanupParams.Limit is 0.
const DefaultCleanupLimit = sqlmaint.DefaultCleanupLimit

// maintenanceDialect is the upkeep SQL's view of MySQL and MariaDB
// (Cleanup, TryLock), made once by New; statements run through exec.
// TryLock's row is created once (INSERT IGNORE, expired), then taken by a
// conditional UPDATE whose rows-affected count is 1 only for the winner,
// whatever the DSN's clientFoundRows setting.
func (s *Store) maintenanceDialect() sqlmaint.Dialect {
	return sqlmaint.Dialect{
		Name:   "mysql store",
		Quote:  quote,
		Scope:  func(sc store.Scope) (string, []any) { return sqlbuild.ScopeWhere(sc, "") },
		Delete: cleanupSQL,
		Age:    func(d time.Duration) any { return sqlbuild.Micros(d) },
		Lock: func(name string, interval time.Duration) []sqlmaint.Statement {
			return []sqlmaint.Statement{
				{SQL: "INSERT IGNORE INTO herald_locks (name, locked_until) VALUES (?, '1970-01-01 00:00:01')", Args: []any{name}},
				{SQL: `UPDATE herald_locks SET locked_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
WHERE name = ? AND locked_until <= UTC_TIMESTAMP(6)`, Args: []any{sqlbuild.Micros(interval), name}},
			}
		},
		Exec: s.exec,
	}
}

// cleanupSQL is one cleanup round's statement: delivered and dead rows by
// their last change (kept in available_at, so the claim index finds them),
// pending rows by created_at.
func cleanupSQL(_, table string, r sqlmaint.Round, scope string) string {
	cond, order := "status = 'delivered' AND available_at", "available_at"
	switch r {
	case sqlmaint.Dead:
		cond = "status = 'dead' AND available_at"
	case sqlmaint.Pending:
		cond, order = "status = 'pending' AND created_at", "id"
	}
	return "DELETE FROM " + table + " WHERE " + cond + " < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND" + scope +
		" ORDER BY " + order + " LIMIT ?"
}

// exec runs one statement in a READ COMMITTED transaction, retrying
// deadlocks, and returns rows affected. Autocommit would run it at the
// session's level, REPEATABLE READ by default, whose next-key locks on a
// range DELETE or UPDATE can hold up producers and claims.
func (s *Store) exec(ctx context.Context, q string, args ...any) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q, args...)
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
	if t := s.mappedTable(sc.Table); t != nil {
		return t.Stats(ctx, sc)
	}
	var st store.LaneStats
	table, err := quote(sc.Table)
	if err != nil {
		return st, err
	}
	scope, args := sqlbuild.ScopeWhere(sc, "")
	rows, err := s.db.QueryContext(ctx, `SELECT status, attempts > 0, COUNT(*),
  MAX(TIMESTAMPDIFF(MICROSECOND, available_at, UTC_TIMESTAMP(6))) FROM `+table+` WHERE 1 = 1`+scope+
		" GROUP BY status, attempts > 0", args...)
	if err == nil {
		st, err = sqlscan.ScanStats(rows)
	}
	if err != nil {
		return st, fmt.Errorf("mysql store: stats %s: %w", sc.Table, err)
	}
	return st, nil
}

// Unselected counts the unfinished rows of within that none of lanes
// selects, in one plain read.
func (s *Store) Unselected(ctx context.Context, within store.Scope, lanes []store.Scope) (int64, error) {
	if t := s.mappedTable(within.Table); t != nil {
		return t.Unselected(ctx, within, lanes)
	}
	table, err := quote(within.Table)
	if err != nil {
		return 0, err
	}
	cond, args, err := sqlbuild.UnselectedWhere(within, lanes, "")
	if err != nil {
		return 0, fmt.Errorf("mysql store: %w", err)
	}
	var n int64
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table+
		` WHERE status IN ('pending', 'in_flight')`+cond, args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("mysql store: unselected %s: %w", within.Table, err)
	}
	return n, nil
}

// DefaultListLimit is the page size of List when ListParams.Limit is 0.
const DefaultListLimit = 100

// List returns up to p.Limit rows of p.Status with ids above p.AfterID, in
// id order (a mapped table's by event id, after p.AfterEventID).
func (s *Store) List(ctx context.Context, p store.ListParams) ([]store.Record, error) {
	if t := s.mappedTable(p.Table); t != nil {
		return t.List(ctx, p, DefaultListLimit)
	}
	return s.reader().List(ctx, p, DefaultListLimit)
}

// Get returns the row of eventID, or store.ErrNotFound.
func (s *Store) Get(ctx context.Context, table, eventID string) (store.Record, error) {
	if t := s.mappedTable(table); t != nil {
		return t.Get(ctx, eventID)
	}
	return s.reader().Get(ctx, table, eventID)
}

func (s *Store) reader() sqlscan.Reader {
	return sqlscan.Reader{Name: "mysql store", DB: s.db, Now: "UTC_TIMESTAMP(6)", Bind: nil, Quote: quote}
}

// Replay moves dead rows back to pending, claimable at once, with attempts
// reset. last_error is kept, so an operator still sees why the event died
// until it fails again or is delivered.
func (s *Store) Replay(ctx context.Context, sc store.Scope, eventIDs []string) (int64, error) {
	if t := s.mappedTable(sc.Table); t != nil {
		return t.Replay(ctx, sc, eventIDs)
	}
	return s.onDead(ctx, "replay", sc, eventIDs,
		"UPDATE {{T}} SET status = 'pending', attempts = 0, available_at = UTC_TIMESTAMP(6)")
}

// Purge deletes dead rows.
func (s *Store) Purge(ctx context.Context, sc store.Scope, eventIDs []string) (int64, error) {
	if t := s.mappedTable(sc.Table); t != nil {
		return t.Purge(ctx, sc, eventIDs)
	}
	return s.onDead(ctx, "purge", sc, eventIDs, "DELETE FROM {{T}}")
}

// onDead runs head on the scope's dead rows, or only those of eventIDs.
func (s *Store) onDead(ctx context.Context, op string, sc store.Scope, eventIDs []string, head string) (int64, error) {
	table, err := quote(sc.Table)
	if err != nil {
		return 0, err
	}
	scope, args := sqlbuild.ScopeWhere(sc, "")
	q := sqlbuild.ReplaceTable(head, table) + " WHERE status = 'dead'" + scope
	if len(eventIDs) > 0 {
		q += " AND event_id IN (" + sqlbuild.Marks(len(eventIDs)) + ")"
		args = append(args, sqlbuild.StringArgs(eventIDs)...)
	}
	n, err := s.exec(ctx, q, args...)
	if err != nil {
		return n, fmt.Errorf("mysql store: %s %s: %w", op, sc.Table, err)
	}
	return n, nil
}
