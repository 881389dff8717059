package mysql_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/dbtest"
	"github.com/heraldhq/herald/store/mysql"
)

// openOneConn is a store whose claims' pool has a single connection, so
// that what a claim left in its session can be read back.
func openOneConn(t *testing.T) *mysql.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := mysql.Open(ctx, testenv.MySQLDSN(), mysql.Options{MaxOpenConns: 1})
	if err != nil {
		testenv.Unreachable(t, "MySQL/MariaDB", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestClaimSessionBounded: a claim leaves its connection's session bounded
// to the bound of the shortest lease claimed with (half of it, whole
// seconds, 1 to 5 s).
func TestClaimSessionBounded(t *testing.T) {
	s := openOneConn(t)
	_, table := open(t)
	ctx := context.Background()
	for _, c := range []struct {
		lease time.Duration
		want  int
	}{{time.Minute, 5}, {3 * time.Second, 1}, {time.Minute, 1}} {
		_, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: 1,
			Lease: c.lease, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var idle, lockWait, netWrite, netRead int
		err = s.MultiPool().QueryRowContext(ctx, `SELECT @@session.idle_transaction_timeout,
  @@session.innodb_lock_wait_timeout, @@session.net_write_timeout, @@session.net_read_timeout`).
			Scan(&idle, &lockWait, &netWrite, &netRead)
		if err != nil {
			t.Skipf("not MariaDB (no idle_transaction_timeout): %v", err)
		}
		if idle != c.want || lockWait != c.want || netWrite != c.want || netRead != c.want {
			t.Fatalf("after a claim with lease %v: idle_transaction_timeout %d, innodb_lock_wait_timeout %d, "+
				"net_write_timeout %d, net_read_timeout %d; want all %d", c.lease, idle, lockWait, netWrite, netRead, c.want)
		}
	}
}

// TestFrozenClaimTransactionEnded: a claim transaction whose client goes
// silent with rows locked (as a relay SIGSTOPped there does) is ended by the
// server within the bound, and another store claims the rows, on MariaDB
// (idle_transaction_timeout) and as on MySQL 8 (wait_timeout).
func TestFrozenClaimTransactionEnded(t *testing.T) {
	for _, mode := range []string{"mariadb", "mysql8"} {
		t.Run(mode, func(t *testing.T) {
			frozen := openOneConn(t)
			if mode == "mysql8" {
				frozen.ActAsMySQL8()
			}
			taker, table := open(t)
			const n, lease = 5, 2 * time.Second
			for range n {
				dbtest.Enqueue(t, taker, table, herald.Event{Topic: "t", Type: "Frozen", Payload: []byte(`{}`)})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			locked, thaw, ended := make(chan int, 1), make(chan struct{}), make(chan error, 1)
			thawOnce := sync.OnceFunc(func() { close(thaw) })
			t.Cleanup(thawOnce) // before the stores close, should the test fail
			go func() { ended <- frozen.FreezeInClaim(ctx, table, lease, n, locked, thaw) }()
			if got := <-locked; got != n {
				t.Fatalf("the frozen claim locked %d rows, want %d", got, n)
			}
			start := time.Now()
			var got int
			testenv.WaitFor(t, lease+3*time.Second, 50*time.Millisecond, "the frozen claim's rows claimed by another store", func() bool {
				recs, err := taker.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "taker",
					Token: 2, Lease: lease, Limit: n})
				if err != nil {
					t.Fatal(err)
				}
				got += len(recs)
				return got == n
			})
			t.Logf("rows taken over %v after the freeze", time.Since(start).Round(10*time.Millisecond))
			thawOnce()
			t.Logf("the thawed transaction ended with: %v", <-ended)
			// The frozen store's next claim gets a working connection.
			if _, err := frozen.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: 3,
				Lease: lease, Limit: n}); err != nil {
				t.Fatalf("a claim after the session was ended: %v", err)
			}
		})
	}
}

// TestClaimAfterWaitTimeout: as on MySQL 8, the claims' sessions get a
// wait_timeout of the bound, so the server also closes claim connections
// idle in the pool; the next claim must get another connection, not fail
// with that one.
func TestClaimAfterWaitTimeout(t *testing.T) {
	s := openOneConn(t)
	s.ActAsMySQL8()
	other, table := open(t)
	ctx := context.Background()
	claim := func() error {
		_, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: 1,
			Lease: 2 * time.Second, Limit: 10})
		return err
	}
	if err := claim(); err != nil {
		t.Fatal(err)
	}
	// Leave the closing to the server (the pool would retire the
	// connection itself after half the bound, at its next sweep).
	s.MultiPool().SetConnMaxIdleTime(0)
	var id int64
	if err := s.MultiPool().QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, 50*time.Millisecond, "the server closing the idle claim connection", func() bool {
		var n int
		err := other.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n)
		return err == nil && n == 0
	})
	if err := claim(); err != nil {
		t.Fatalf("a claim on a pool whose connection the server closed: %v", err)
	}
}

// TestBoundEndsBlockedWrite: a claim whose result a frozen relay stops
// reading (the rows fill the socket buffers, the server waits to write) is
// ended within about the bound too, by net_write_timeout. The client here
// reads a large result's first packet on a claims' pool connection and then
// nothing more, which is what the server sees of a SIGSTOPped relay.
func TestBoundEndsBlockedWrite(t *testing.T) {
	s := openOneConn(t)
	other, table := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: 1,
		Lease: 2 * time.Second, Limit: 10}); err != nil { // gives the connection its bound
		t.Fatal(err)
	}
	conn, err := s.MultiPool().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var id int64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	// About 10 MB, far more than loopback socket buffers hold; not read.
	rows, err := conn.QueryContext(ctx, `WITH RECURSIVE d AS (SELECT 0 AS i UNION ALL SELECT i + 1 FROM d WHERE i < 9)
SELECT REPEAT('x', 1000) FROM d a, d b, d c, d e`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	start := time.Now()
	testenv.WaitFor(t, 6*time.Second, 50*time.Millisecond, "the server ending the stuck session", func() bool {
		var n int
		err := other.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n)
		return err == nil && n == 0
	})
	t.Logf("session ended %v after the client stopped reading", time.Since(start).Round(10*time.Millisecond))
}
