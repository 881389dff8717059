package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald"
)

// Enqueue writes events into outboxTable inside tx, a pgx transaction, the
// way herald.Outbox.Enqueue does on a *sql.Tx: same validation, ids, trace
// context, INSERT and NOTIFY. Use EnqueueOutbox for a configured Outbox
// (a payload limit other than the default).
func Enqueue(ctx context.Context, tx pgx.Tx, outboxTable string, events ...herald.Event) error {
	ob, err := herald.NewOutbox(herald.OutboxConfig{Dialect: herald.Postgres, Table: outboxTable})
	if err != nil {
		return err
	}
	return EnqueueOutbox(ctx, ob, tx, events...)
}

// EnqueueOutbox writes events with ob inside tx, a pgx transaction.
//
// It runs ob.Enqueue itself on a database/sql view of tx: a one-connection
// driver whose statements go to tx. So the SQL, and every rule about the
// events, is the root package's, with no second copy to drift.
func EnqueueOutbox(ctx context.Context, ob *herald.Outbox, tx pgx.Tx, events ...herald.Event) error {
	if len(events) == 0 {
		return nil
	}
	db := sql.OpenDB(txConnector{tx: tx})
	defer db.Close()
	stx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := ob.Enqueue(ctx, stx, events...); err != nil {
		_ = stx.Rollback()
		return err
	}
	// Commit of the view does nothing: tx belongs to the caller.
	return stx.Commit()
}

// txConnector hands out connections that run statements in one pgx.Tx.
type txConnector struct{ tx pgx.Tx }

// Connect returns a connection that runs statements in the pgx.Tx.
func (c txConnector) Connect(context.Context) (driver.Conn, error) { return txConn(c), nil }

// Driver returns a driver that cannot open anything by name.
func (c txConnector) Driver() driver.Driver { return txDriver{} }

type txDriver struct{}

func (txDriver) Open(string) (driver.Conn, error) {
	return nil, errors.New("postgres store: the pgx.Tx view has no DSN")
}

// txConn is a driver.Conn over a pgx.Tx. It executes statements only; the
// root package's Enqueue needs no more.
type txConn struct{ tx pgx.Tx }

var (
	_                           driver.ExecerContext     = txConn{}
	_                           driver.ConnBeginTx       = txConn{}
	_                           driver.NamedValueChecker = txConn{}
	errPrepareNotSupportedOnTxV                          = errors.New("postgres store: the pgx.Tx view cannot prepare statements")
)

func (c txConn) Prepare(string) (driver.Stmt, error) { return nil, errPrepareNotSupportedOnTxV }
func (c txConn) Close() error                        { return nil }
func (c txConn) Begin() (driver.Tx, error)           { return noopTx{}, nil }

func (c txConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) { return noopTx{}, nil }

// CheckNamedValue passes every argument through unchanged: pgx encodes them.
func (c txConn) CheckNamedValue(*driver.NamedValue) error { return nil }

// ExecContext runs query in the pgx.Tx.
func (c txConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	tag, err := c.tx.Exec(ctx, query, vals...)
	if err != nil {
		return nil, err
	}
	return driver.RowsAffected(tag.RowsAffected()), nil
}

// noopTx is the view's transaction: the real one is the caller's pgx.Tx.
type noopTx struct{}

func (noopTx) Commit() error   { return nil }
func (noopTx) Rollback() error { return nil }
