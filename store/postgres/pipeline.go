package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/heraldhq/herald/store/internal/sqlscan"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// A claim or a mark is a transaction of four statements: BEGIN, the
// settings (planSettings or asyncCommit), the statement itself and COMMIT.
// Sent one by one through database/sql they cost four round trips, each a
// wake-up of the relay and of the server backend. oneTrip sends all four as
// one pgx batch ending in a single Sync: one round trip (measured at batch
// 100 with one worker: the store's claim + mark limit 12.6 k → 15.0 k
// events/s, docs/benchmarks.md). The server runs them in order; if one fails it skips
// the rest up to the Sync, so COMMIT never runs after a failed statement
// and the transaction is rolled back (sendTx sends the ROLLBACK that
// leaves the session idle). The server commits without waiting for the
// client to read the results: a relay that dies or freezes after sending
// a claim leaves its rows in flight until their lease ends, which is what
// the lease is for (docs/isolation.md).

// statementTx runs settings($1 = bound), then q with args, as one READ
// COMMITTED transaction, handing q's rows to read: in one round trip
// (oneTrip) on a pool of pgx's driver, a statement at a time otherwise.
func (s *Store) statementTx(ctx context.Context, settings, bound, q string, args []any, read func(sqlscan.Cursor) error) error {
	if s.pipelined {
		return s.oneTrip(ctx, settings, bound, q, args, read)
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, settings, bound); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		return read(rows)
	})
}

// pipelines reports whether db's connections are pgx's, which oneTrip
// needs; a pool from another driver takes the database/sql path.
func pipelines(db *sql.DB) bool {
	_, ok := db.Driver().(*stdlib.Driver)
	return ok
}

// oneTrip runs settings($1 = bound), then q with args, as one READ
// COMMITTED transaction in one round trip, and hands q's rows to read
// before they are closed. Conflicts are retried like inTx's, and so is a
// connection found dead before anything reached the server (a pooled
// connection the server closed, after a restart say).
func (s *Store) oneTrip(ctx context.Context, settings, bound, q string, args []any, read func(sqlscan.Cursor) error) error {
	return retryLoop(ctx, func() error {
		var err error
		for attempt := 0; attempt < 3; attempt++ {
			if err = s.sendOnConn(ctx, settings, bound, q, args, read); !pgconn.SafeToRetry(err) {
				return err
			}
		}
		return err
	})
}

// sendOnConn runs sendTx on one pooled connection.
func (s *Store) sendOnConn(ctx context.Context, settings, bound, q string, args []any, read func(sqlscan.Cursor) error) error {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return errors.New("the pool does not use the pgx driver")
		}
		return sendTx(ctx, sc.Conn(), settings, bound, q, args, read)
	})
}

// sendTx sends the transaction as one batch and reads its results. A
// failed transaction is rolled back before the connection goes back to the
// pool, or the connection is closed (and so dropped by the pool) if that
// fails too.
func sendTx(ctx context.Context, conn *pgx.Conn, settings, bound, q string, args []any, read func(sqlscan.Cursor) error) error {
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	b.Queue(settings, bound)
	b.Queue(q, args...)
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	err := readTx(br, read)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil && !conn.IsClosed() && conn.PgConn().TxStatus() != 'I' {
		if _, rerr := conn.Exec(ctx, "ROLLBACK"); rerr != nil || conn.PgConn().TxStatus() != 'I' {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}
	return err
}

// readTx reads the batch's four results in order.
func readTx(br pgx.BatchResults, read func(sqlscan.Cursor) error) error {
	for range 2 { // BEGIN, settings
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	err = read(rows)
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return err
	}
	_, err = br.Exec() // COMMIT
	return err
}
