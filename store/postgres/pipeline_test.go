package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlscan"
	"github.com/heraldhq/herald/store/storetest"
)

// TestPipelineIsOneTransaction: oneTrip's statements run in one
// transaction whose settings stay local to it; a failing statement undoes
// what the transaction wrote and leaves the connection idle and usable.
func TestPipelineIsOneTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Open(ctx, testenv.PostgresDSN(), Options{MaxOpenConns: 1})
	if err != nil {
		testenv.Unreachable(t, "PostgreSQL", err)
	}
	defer s.Close()
	if !s.pipelined {
		t.Fatal("a pool opened by Open does not pipeline")
	}
	db := s.DB()
	for _, q := range []string{"DROP TABLE IF EXISTS herald_pipe_test", "CREATE TABLE herald_pipe_test (v int PRIMARY KEY)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	defer db.Exec("DROP TABLE herald_pipe_test")

	var inside string
	err = s.oneTrip(ctx, s.markSettings(), "1000",
		"INSERT INTO herald_pipe_test VALUES (1) RETURNING current_setting('synchronous_commit')", nil,
		func(rows sqlscan.Cursor) error {
			for rows.Next() {
				if err := rows.Scan(&inside); err != nil {
					return err
				}
			}
			return rows.Err()
		})
	if err != nil || inside != "off" {
		t.Fatalf("inside the transaction synchronous_commit = %q (err %v), want off", inside, err)
	}
	var after string
	if err := db.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&after); err != nil || after != "on" {
		t.Fatalf("after it, on the same connection: %q (err %v), want on", after, err)
	}

	// The INSERT succeeds, then the statement fails: nothing of it stays.
	err = s.oneTrip(ctx, s.markSettings(), "1000",
		"WITH i AS (INSERT INTO herald_pipe_test VALUES (2) RETURNING v) SELECT v / 0 FROM i", nil,
		func(rows sqlscan.Cursor) error {
			for rows.Next() {
			}
			return rows.Err()
		})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22012" {
		t.Fatalf("failing statement: err %v, want division_by_zero", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM herald_pipe_test").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows after the failed transaction: %d (err %v), want 1", n, err)
	}
}

// TestConformanceInTx runs the store's conformance suite with claims and
// marks sent a statement at a time, the path of pools from other drivers.
func TestConformanceInTx(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) store.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := Open(ctx, testenv.PostgresDSN(), Options{})
		if err != nil {
			testenv.Unreachable(tb, "PostgreSQL", err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		s.pipelined = false
		return s
	}, storetest.Features{Wakeups: true, TenantSkipList: true, LogLanes: true})
}
