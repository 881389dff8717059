package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/heraldhq/herald/backoff"
	"github.com/heraldhq/herald/internal/sleep"
)

// The relay's claims and marks wait for the write lock in Go, not in
// SQLite's busy handler. The handler sleeps 1, 2, 5, 10, … ms between
// tries, and a relay in the same process as busy producers met a held lock
// on most claims: at 500 commits/s the median commit → ack latency was
// 22 ms. So Open gives claims and marks a connection of their own with no
// busy timeout, and hotWrite retries SQLITE_BUSY after 50 µs, doubling up
// to 1 ms, within the store's busy timeout.
var busyRetry = backoff.Policy{Initial: 50 * time.Microsecond, Max: time.Millisecond}

// openHot opens the claims' and marks' pool: one connection (the store's
// writes are one at a time anyway) with busy_timeout 0.
func openHot(ctx context.Context, dsn string, opts Options) (*sql.DB, error) {
	opts.BusyTimeout = -1 // withParams then sets busy_timeout(0)
	db, err := sql.Open("sqlite", withParams(dsn, opts))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	return db, nil
}

// hotWrite runs fn, a claim or a mark, holding the store's write slot, on
// the hot pool with its own statement cache when the store has one (Open),
// retrying while the database is locked; else on the main pool (New).
func (s *Store) hotWrite(ctx context.Context, fn func(db *sql.DB, stmts *stmtCache) error) error {
	return s.write(ctx, func() error {
		if s.hot == nil {
			return fn(s.db, &s.stmts)
		}
		deadline := time.Now().Add(s.busyTimeout)
		wait := backoff.Series{Policy: busyRetry}
		for {
			err := fn(s.hot, &s.hotStmts)
			if !isBusy(err) || time.Now().After(deadline) {
				return err
			}
			if !sleep.For(ctx, wait.Next()) {
				return err
			}
		}
	})
}

// isBusy reports SQLITE_BUSY (any extended code): the statement did
// nothing and may run again.
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}
