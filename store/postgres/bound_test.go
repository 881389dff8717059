package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/testenv"
)

// TestBoundSettings: the claim's and the mark's first statement bound their
// transaction (idle and lock waits) and leave the session as it was.
func TestBoundSettings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Open(ctx, testenv.PostgresDSN(), Options{MaxOpenConns: 1})
	if err != nil {
		testenv.Unreachable(t, "PostgreSQL", err)
	}
	defer s.Close()
	db := s.DB()
	if !s.tcpBound {
		t.Skip("the server does not run on Linux: no tcp_user_timeout")
	}
	for name, q := range map[string]string{"claim": s.claimSettings(), "mark": s.markSettings()} {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(q, boundArg(1500*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		for v, want := range map[string]string{"idle_in_transaction_session_timeout": "1500ms",
			"lock_timeout": "1500ms", "tcp_user_timeout": "1500"} {
			var got string
			if err := tx.QueryRow("SHOW " + v).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s: %s is %s in the transaction, want %s", name, v, got, want)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		var after string // the pool's one connection, after the transaction
		if err := db.QueryRow("SHOW idle_in_transaction_session_timeout").Scan(&after); err != nil || after != "0" {
			t.Errorf("%s: idle_in_transaction_session_timeout is %q (%v) after the transaction, want 0", name, after, err)
		}
	}
}

// TestBoundEndsBlockedWrite: a claim whose result a frozen relay stops
// reading (the rows fill the socket buffers, the backend waits in
// ClientWrite, neither idle nor in a lock) is ended within about the bound
// too, by tcp_user_timeout. The client here sends the claim's settings and
// a large query on a raw connection and then reads nothing, which is what
// the server sees of a SIGSTOPped relay.
func TestBoundEndsBlockedWrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, testenv.PostgresDSN(), Options{})
	if err != nil {
		testenv.Unreachable(t, "PostgreSQL", err)
	}
	defer s.Close()
	conn, err := pgconn.Connect(ctx, testenv.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.Exec(ctx, "BEGIN").Close(); err != nil {
		t.Fatal(err)
	}
	bound := time.Second
	if !s.tcpBound {
		t.Skip("the server does not run on Linux: no tcp_user_timeout")
	}
	if err := conn.ExecParams(ctx, s.markSettings(), [][]byte{[]byte(boundArg(bound))}, nil, nil, nil).Read().Err; err != nil {
		t.Fatal(err)
	}
	// About 20 MB, far more than loopback socket buffers hold; not read.
	_ = conn.Exec(ctx, "SELECT repeat('x', 1000) FROM generate_series(1, 20000)")
	pid := conn.PID()
	start := time.Now()
	testenv.WaitFor(t, bound+5*time.Second, 50*time.Millisecond, "the server ending the stuck session", func() bool {
		var n int
		err := s.DB().QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&n)
		return err == nil && n == 0
	})
	t.Logf("session ended %v after the client stopped reading", time.Since(start).Round(10*time.Millisecond))
}
