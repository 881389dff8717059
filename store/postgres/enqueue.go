package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald"
)

// Enqueue writes events into outboxTable inside tx, a pgx transaction, the
// way herald.Outbox.Enqueue does on a *sql.Tx: same validation, ids, trace
// context, INSERT and NOTIFY. For a configured Outbox (a payload limit
// other than the default), call its Enqueue with Execer(tx).
func Enqueue(ctx context.Context, tx pgx.Tx, outboxTable string, events ...herald.Event) error {
	ob, err := herald.NewOutbox(herald.OutboxConfig{Dialect: Dialect, Table: outboxTable})
	if err != nil {
		return err
	}
	return ob.Enqueue(ctx, Execer(tx), events...)
}

// EnqueueOutbox writes events with ob inside tx, a pgx transaction.
//
// Deprecated: call ob.Enqueue(ctx, Execer(tx), events...).
func EnqueueOutbox(ctx context.Context, ob *herald.Outbox, tx pgx.Tx, events ...herald.Event) error {
	return ob.Enqueue(ctx, Execer(tx), events...)
}

// PgxExecutor is what Execer needs of pgx: pgx.Tx, *pgx.Conn and
// *pgxpool.Pool (and its Tx) all have it.
type PgxExecutor interface {
	Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error)
}

// Execer lets a pgx transaction run herald.Outbox.Enqueue's statements.
func Execer(tx PgxExecutor) herald.Execer { return pgxExecer{tx} }

type pgxExecer struct{ tx PgxExecutor }

// ExecContext runs query through pgx, which encodes the arguments itself.
func (e pgxExecer) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if e.tx == nil {
		return nil, errNoTx
	}
	tag, err := e.tx.Exec(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return driver.RowsAffected(tag.RowsAffected()), nil
}

// errNoTx is the error of an Execer made from a nil transaction.
var errNoTx = errors.New("postgres store: Execer: no pgx transaction")
