package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/dbtest"
	"github.com/heraldhq/herald/store/sqlite"
	"github.com/heraldhq/herald/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// opener returns a storetest.Opener whose stores all share one database
// file in a temporary directory, as two processes would.
func opener(tb testing.TB, opts sqlite.Options) storetest.Opener {
	path := filepath.Join(tb.TempDir(), "herald.db")
	return func(tb testing.TB) store.Store {
		s, err := sqlite.Open(context.Background(), path, opts)
		if err != nil {
			tb.Fatalf("open: %v", err)
		}
		tb.Cleanup(func() { s.Close() })
		return s
	}
}

// features are the optional abilities of a SQLite store.
var features = storetest.Features{Peeks: true, Previews: true}

func TestConformance(t *testing.T) {
	storetest.Run(t, opener(t, sqlite.Options{}), features)
}

func BenchmarkStore(b *testing.B) {
	b.Run("full", func(b *testing.B) { storetest.Bench(b, opener(b, sqlite.Options{})) })
	b.Run("normal", func(b *testing.B) { storetest.Bench(b, opener(b, sqlite.Options{SynchronousNormal: true})) })
}

// TestMigrateRace runs Migrate from several stores at once, as several
// processes starting together would.
func TestMigrateRace(t *testing.T) {
	open := opener(t, sqlite.Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		s := open(t)
		wg.Go(func() { errs <- s.Migrate(context.Background(), "herald_outbox") })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}
	var n int
	err := open(t).DB().QueryRow(`SELECT count(*) FROM herald_migrations WHERE table_name = 'herald_outbox'`).Scan(&n)
	if err != nil || n != 3 {
		t.Errorf("herald_migrations has %d rows for the table (err %v), want 3 (one per version)", n, err)
	}
}

// TestPragmas checks the connection settings Open promises.
func TestPragmas(t *testing.T) {
	for _, tc := range []struct {
		opts sqlite.Options
		sync int
	}{{sqlite.Options{}, 2}, {sqlite.Options{SynchronousNormal: true}, 1}} {
		s := opener(t, tc.opts)(t).(*sqlite.Store)
		var mode string
		var syncMode, busy int
		db := s.DB()
		if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("journal_mode = %q (%v), want wal", mode, err)
		}
		if err := db.QueryRow("PRAGMA synchronous").Scan(&syncMode); err != nil || syncMode != tc.sync {
			t.Errorf("synchronous = %d (%v), want %d", syncMode, err, tc.sync)
		}
		if err := db.QueryRow("PRAGMA busy_timeout").Scan(&busy); err != nil || busy <= 0 {
			t.Errorf("busy_timeout = %d (%v), want > 0", busy, err)
		}
	}
}

func TestInvalidTable(t *testing.T) {
	s := opener(t, sqlite.Options{})(t)
	if err := s.Migrate(context.Background(), `x"; DROP TABLE y; --`); err == nil {
		t.Error("Migrate accepted an invalid table name")
	}
}

// BenchmarkWriteQueue compares the store's in-process write queue with
// letting SQLite's busy handler arbitrate between concurrent claimers.
func BenchmarkWriteQueue(b *testing.B) {
	for _, queue := range []bool{true, false} {
		name := map[bool]string{true: "queue", false: "busy_handler"}[queue]
		b.Run(name, func(b *testing.B) {
			s := opener(b, sqlite.Options{})(b).(*sqlite.Store)
			if !queue {
				sqlite.DisableWriteQueue(s)
			}
			storetest.BenchParallel(b, s, 4, 100)
		})
	}
}

func TestOpenRejectsMemory(t *testing.T) {
	for _, dsn := range []string{"", ":memory:", "file:x?mode=memory&cache=shared"} {
		if s, err := sqlite.Open(context.Background(), dsn, sqlite.Options{}); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded; an in-memory database cannot be shared by the pool", dsn)
		}
	}
}

// TestOpenKeepsCallerSettings checks that settings in the DSN win over
// Open's defaults.
func TestOpenKeepsCallerSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := sqlite.Open(context.Background(), "file:"+path+"?_pragma=synchronous(OFF)", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mode int
	if err := s.DB().QueryRow("PRAGMA synchronous").Scan(&mode); err != nil || mode != 0 {
		t.Errorf("synchronous = %d (%v), want the DSN's OFF (0)", mode, err)
	}
}

// TestNewLeavesPoolOpen checks that a Store from New does not close the
// caller's pool.
func TestNewLeavesPoolOpen(t *testing.T) {
	owned := opener(t, sqlite.Options{})(t)
	s := sqlite.New(owned.DB())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := owned.DB().Ping(); err != nil {
		t.Errorf("pool closed by a Store from New: %v", err)
	}
}

// openEnqueueTx opens a store with a migrated default table and returns it
// with a transaction that enqueued one event and is still open, holding
// SQLite's write lock (rolled back when the test ends).
func openEnqueueTx(t *testing.T, opts sqlite.Options) (store.Store, *sql.Tx) {
	t.Helper()
	ctx := context.Background()
	s := opener(t, opts)(t)
	if err := s.Migrate(ctx, herald.DefaultTable); err != nil {
		t.Fatal(err)
	}
	ob, err := herald.NewOutbox(herald.OutboxConfig{Dialect: sqlite.Dialect})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	if err := ob.Enqueue(ctx, tx, herald.Event{Topic: "t", Type: "T"}); err != nil {
		t.Fatal(err)
	}
	return s, tx
}

// TestClaimWaitsForOpenEnqueue holds an enqueue transaction (and so
// SQLite's write lock) open while a claim runs: the claim must wait for the
// commit, not fail with SQLITE_BUSY, and then see the event.
func TestClaimWaitsForOpenEnqueue(t *testing.T) {
	ctx := context.Background()
	s, tx := openEnqueueTx(t, sqlite.Options{})
	claimed := make(chan int, 1)
	go func() {
		recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: herald.DefaultTable},
			Owner: "w", Token: 1, Lease: time.Minute, Limit: 10})
		if err != nil {
			t.Errorf("claim during an open enqueue transaction: %v", err)
		}
		claimed <- len(recs)
	}()
	select {
	case n := <-claimed:
		t.Fatalf("claim returned %d rows while the enqueue transaction held the write lock", n)
	case <-time.After(100 * time.Millisecond):
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := <-claimed; n != 1 {
		t.Errorf("claim after the commit got %d rows, want 1", n)
	}
}

// TestClaimGivesUpAfterBusyTimeout holds the write lock longer than the
// store's busy timeout: the claim, which waits in Go (see hotWrite), must
// give up with SQLite's "database is locked" rather than wait on.
func TestClaimGivesUpAfterBusyTimeout(t *testing.T) {
	ctx := context.Background()
	s, _ := openEnqueueTx(t, sqlite.Options{BusyTimeout: 150 * time.Millisecond})
	_, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: herald.DefaultTable},
		Owner: "w", Token: 1, Lease: time.Minute, Limit: 10})
	if err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("claim against a lock held past the busy timeout: err %v, want database is locked", err)
	}
}

// TestConformanceOnCallersPool runs the suite on stores from New, which
// claim and mark on the caller's pool (no connection of their own).
func TestConformanceOnCallersPool(t *testing.T) {
	open := opener(t, sqlite.Options{})
	storetest.Run(t, func(tb testing.TB) store.Store { return sqlite.New(open(tb).DB()) }, features)
}

// TestSQLiteUpgradeToAttemptErrors upgrades a version-2 table to version
// 3, which adds attempt_errors (see dbtest.UpgradeToAttemptErrors).
func TestSQLiteUpgradeToAttemptErrors(t *testing.T) {
	dbtest.UpgradeToAttemptErrors(t, opener(t, sqlite.Options{})(t), 3, false)
}
