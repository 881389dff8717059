package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/heraldhq/herald/store"
)

// pipelineTx is the projection dialect's Pipeline: BEGIN, stmts and COMMIT
// as one pgx batch ending in a single Sync, so a batch apply of new events
// is one round trip instead of one per statement (a YAML projection's
// upserts each waited for its answer: most of an apply's time). The server
// skips everything after a failed statement up to the Sync, so COMMIT
// never runs after a failure (see sendTx). A connection found dead before
// anything reached the server is retried on another.
func (s *Store) pipelineTx(ctx context.Context, stmts []store.Stmt) (failed int, err error) {
	for range 3 {
		failed, err = s.pipelineOnConn(ctx, stmts)
		if !pgconn.SafeToRetry(err) {
			break
		}
	}
	return failed, err
}

func (s *Store) pipelineOnConn(ctx context.Context, stmts []store.Stmt) (failed int, err error) {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return -1, err
	}
	defer c.Close()
	failed = -1
	err = c.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return errors.New("the pool does not use the pgx driver")
		}
		failed, err = sendStatements(ctx, sc.Conn(), stmts)
		return err
	})
	return failed, err
}

// sendStatements sends the transaction and reads its results in order:
// the first error is the failing statement's (its index), or -1 when
// BEGIN, the connection or COMMIT failed. A failed transaction is rolled
// back before the connection goes back to the pool, or the connection is
// closed (and dropped by the pool) if that fails too.
func sendStatements(ctx context.Context, conn *pgx.Conn, stmts []store.Stmt) (failed int, err error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	for _, st := range stmts {
		b.Queue(st.SQL, st.Args...)
	}
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	failed = -1
	for i := -1; i <= len(stmts) && err == nil; i++ {
		if _, err = br.Exec(); err != nil && i >= 0 && i < len(stmts) && isServerError(err) {
			failed = i
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil && !conn.IsClosed() && conn.PgConn().TxStatus() != 'I' {
		if _, rerr := conn.Exec(ctx, "ROLLBACK"); rerr != nil || conn.PgConn().TxStatus() != 'I' {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}
	return failed, err
}

// isServerError reports an error the server answered a statement with. Any
// other (a lost connection, an argument pgx could not encode) fails the
// whole batch, whose events are then applied one by one, where a bad
// argument is its own event's failure.
func isServerError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}
