package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"time"

	"github.com/heraldhq/herald/store/internal/sqltx"
)

// txRunner is what a claim needs of a transaction: a *sql.Tx or a batchTx.
type txRunner interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// beginRC opens a READ COMMITTED transaction; see docs/isolation.md.
const beginRC = "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION; "

// batchTx is a READ COMMITTED transaction on one connection of a pool with
// multiStatements on, whose BEGIN and COMMIT ride on its statements instead
// of taking round trips of their own: BEGIN goes out with the first query,
// and the last Exec waits to go out with COMMIT. A claim is then two round
// trips instead of five, which on loopback under load was a third of its
// time and most of the relay's CPU (syscalls and wakeups per round trip).
type batchTx struct {
	conn     *sql.Conn
	setup    string // statements to send before BEGIN (boundSetup)
	setupRan func()
	begun    bool
	held     string // an Exec waiting for the next statement or COMMIT
	heldArgs []any
}

// QueryContext sends query, after BEGIN or a held Exec if due.
func (t *batchTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	setup := t.setup != ""
	query, args = t.prefix(query, args)
	rows, err := t.conn.QueryContext(ctx, query, args...)
	if err == nil && setup && t.setupRan != nil {
		t.setupRan()
	}
	return rows, err
}

// ExecContext holds the statement to send with the next one. Its result is
// not known yet: the claim needs none, and an error surfaces at commit.
func (t *batchTx) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	if t.held != "" {
		return nil, errors.New("mysql store: batchTx holds one Exec at a time")
	}
	t.held, t.heldArgs = query, args
	return driver.RowsAffected(0), nil
}

// commit sends the held Exec, if any, with COMMIT.
func (t *batchTx) commit(ctx context.Context) error {
	if !t.begun && t.held == "" {
		return nil
	}
	query, args := t.prefix("COMMIT", nil)
	_, err := t.conn.ExecContext(ctx, query, args...)
	return err
}

// prefix puts BEGIN (on the first statement) and any held Exec before query.
func (t *batchTx) prefix(query string, args []any) (string, []any) {
	if t.held != "" {
		query = t.held + "; " + query
		args = append(t.heldArgs, args...)
		t.held, t.heldArgs = "", nil
	}
	if !t.begun {
		query = t.setup + beginRC + query
		t.begun, t.setup = true, ""
	}
	return query, args
}

// inBatchTx runs f in a batchTx on a connection of s.multi, committing when
// f succeeds and rolling back otherwise; deadlocks are retried like inTx's.
//
// When async, asked once f has succeeded, says so, the commit (with the
// held Exec) is sent in the background and inBatchTx returns at once; Close
// waits for it.
//
// The session gets bound (boundSQL) with the transaction's first packet if
// it does not have it yet. A statement the driver could not send at all
// (driver.ErrBadConn: the server closed the connection, say after ending
// this transaction for its silence, which rolled it back) runs the whole
// transaction again on another connection.
func (s *Store) inBatchTx(ctx context.Context, bound time.Duration, async func() bool, f func(tx txRunner) error) error {
	return sqltx.Retry(ctx, retryableOrBadConn, func() error {
		conn, err := s.multi.Conn(ctx)
		if err != nil {
			return err
		}
		tx := &batchTx{conn: conn}
		tx.setup, tx.setupRan = s.boundSetup(conn, bound)
		if err = f(tx); err != nil {
			tx.end(ctx, err)
			return err
		}
		if async() {
			s.commits.Go(func() {
				bg := context.WithoutCancel(ctx)
				tx.end(bg, tx.commit(bg))
			})
			return nil
		}
		err = tx.commit(ctx)
		tx.end(ctx, err)
		return err
	})
}

// end releases the connection after a commit or a failure (err), rolling
// back after a failure. A connection whose rollback failed is closed rather
// than reused: it may still be inside the transaction.
func (t *batchTx) end(ctx context.Context, err error) {
	if err != nil && t.begun {
		if _, rbErr := t.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rbErr != nil {
			_ = t.conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}
	_ = t.conn.Close()
}

// inClaimTx runs a claim's f in a batchTx when the store has a
// multi-statement pool (Open makes one), else in an ordinary transaction
// (New, on the caller's pool).
//
// On a caller's pool the transaction is not bounded (see boundSQL): setting
// session variables there would change the caller's own transactions too.
func (s *Store) inClaimTx(ctx context.Context, bound time.Duration, async func() bool, f func(tx txRunner) error) error {
	if s.multi == nil {
		return s.inTx(ctx, func(tx *sql.Tx) error { return f(tx) })
	}
	return s.inBatchTx(ctx, bound, async, f)
}

// retryableOrBadConn is retryable, or a connection the driver found dead
// before sending anything.
func retryableOrBadConn(err error) bool { return retryable(err) || errors.Is(err, driver.ErrBadConn) }
