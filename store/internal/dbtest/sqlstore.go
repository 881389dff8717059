package dbtest

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// Opener opens a store on the test server; it skips (or, with CI=true,
// fails) when the server is unreachable.
type Opener func(tb testing.TB) store.Store

// Quote returns table quoted for s's SQL dialect.
func Quote(s store.Store, table string) string { return s.Dialect().Quote(table) }

// Bind turns a statement with ? placeholders into s's dialect.
func Bind(s store.Store, q string) string { return s.Dialect().Rebind(q) }

// Drop removes table and its herald_migrations rows: a test's cleanup.
func Drop(s store.Store, table string) {
	_, _ = s.DB().Exec("DROP TABLE IF EXISTS " + Quote(s, table))
	_, _ = s.DB().Exec(Bind(s, "DELETE FROM herald_migrations WHERE table_name = ?"), table)
}

// Migrated returns a fresh table named after prefix, migrated on s for
// every kind of lane (store.MigrateFor) and dropped when the test ends.
func Migrated(t *testing.T, s store.Store, prefix string) string {
	t.Helper()
	table := testenv.Name(prefix)
	if err := store.MigrateFor(context.Background(), s, table, store.TableUse{Ordered: true, Tenants: true}); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	t.Cleanup(func() { Drop(s, table) })
	return table
}

// Enqueue writes evs to table through herald.Outbox in one transaction.
func Enqueue(t testing.TB, s store.Store, table string, evs ...herald.Event) {
	t.Helper()
	ob, err := herald.NewOutbox(herald.OutboxConfig{Dialect: s.Dialect(), Table: table})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := s.DB().Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Enqueue(context.Background(), tx, evs...); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// ClaimComplete claims two rows, checks that a second worker gets none and
// that a wrong fencing token completes nothing, then completes them.
func ClaimComplete(t *testing.T, s store.Store, table string) {
	ctx := context.Background()
	Enqueue(t, s, table,
		herald.Event{Topic: "t", Type: "A", Payload: []byte("1"), Headers: map[string]string{"h": "v"}},
		herald.Event{Topic: "t", Type: "B", Payload: []byte("2")})
	recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w1", Token: 7, Lease: time.Minute, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Attempts != 1 || recs[0].Event.Headers["h"] != "v" || recs[0].Status != store.StatusInFlight {
		t.Fatalf("claimed %+v", recs)
	}
	again, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w2", Token: 8, Lease: time.Minute, Limit: 10})
	if err != nil || len(again) != 0 {
		t.Fatalf("second claim got %d rows, %v", len(again), err)
	}
	lost, err := s.Complete(ctx, store.Fence{Table: table, Token: 8}, []store.Delivery{{ID: recs[0].ID}, {ID: recs[1].ID}})
	if err != nil || len(lost) != 2 {
		t.Fatalf("complete with a wrong token: lost %v, %v", lost, err)
	}
	lost, err = s.Complete(ctx, store.Fence{Table: table, Token: 7}, []store.Delivery{{ID: recs[0].ID, Receipt: store.Receipt{Stream: "S", Sequence: 3}}, {ID: recs[1].ID}})
	if err != nil || len(lost) != 0 {
		t.Fatalf("complete: lost %v, %v", lost, err)
	}
	st, err := s.Stats(ctx, store.Scope{Table: table})
	if err != nil || st.Delivered != 2 {
		t.Fatalf("stats %+v, %v", st, err)
	}
	r, err := s.Get(ctx, table, recs[0].Event.ID)
	if err != nil || r.Receipt.Sequence != 3 || r.DeliveredAt.IsZero() {
		t.Fatalf("get %+v, %v", r, err)
	}
}

// OrderedLockedHeadBlocksKey holds a row lock on the head of key "a", as a
// worker in the middle of its claim transaction would. SKIP LOCKED passes
// over that row, but the later row of "a" must not be claimed (it would be
// published before its predecessor); key "b" must be.
func OrderedLockedHeadBlocksKey(t *testing.T, s store.Store, table string) {
	ctx := context.Background()
	ev := func(key string) herald.Event {
		return herald.Event{Topic: "t", Type: "K", PartitionKey: key, Payload: []byte("x")}
	}
	Enqueue(t, s, table, ev("a"), ev("a"), ev("b"))
	var headA int64
	if err := s.DB().QueryRow("SELECT MIN(id) FROM " + Quote(s, table) + " WHERE partition_key = 'a'").Scan(&headA); err != nil {
		t.Fatal(err)
	}
	tx, err := s.DB().BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // rolled back below; this is for early exits
	if _, err := tx.Exec(Bind(s, "SELECT id FROM "+Quote(s, table)+" WHERE id = ? FOR UPDATE"), headA); err != nil {
		t.Fatal(err)
	}
	p := store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: 1, Lease: time.Minute, Limit: 10, Ordered: true}
	recs, err := s.Claim(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Event.PartitionKey != "b" {
		t.Fatalf("with a's head locked by another transaction, claimed %d rows %v; want only b's", len(recs), keysOf(recs))
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	p.Token = 2
	recs, err = s.Claim(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].ID != headA || recs[1].Event.PartitionKey != "a" {
		t.Fatalf("after the lock is gone, claimed %v; want both rows of a, head first", keysOf(recs))
	}
}

func keysOf(recs []store.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Event.PartitionKey
	}
	return out
}

// MigrateRace runs Migrate from several stores at once, as several relays
// starting together would: all succeed, each version is applied once.
func MigrateRace(t *testing.T, open Opener) {
	table := testenv.Name("herald_mig")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		s := open(t)
		wg.Go(func() { errs <- s.Migrate(context.Background(), table) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}
	s := open(t)
	t.Cleanup(func() { Drop(s, table) })
	// One row per version, versions 1..n: each applied once, none skipped
	// (the primary key rules out a version recorded twice).
	var n, lo, hi int
	if err := s.DB().QueryRow(Bind(s, "SELECT COUNT(*), COALESCE(MIN(version), 0), COALESCE(MAX(version), 0) FROM herald_migrations WHERE table_name = ?"),
		table).Scan(&n, &lo, &hi); err != nil || n == 0 || lo != 1 || hi != n {
		t.Errorf("herald_migrations has %d rows for the table, versions %d..%d (err %v), want one per version from 1", n, lo, hi, err)
	}
	if err := s.Migrate(context.Background(), "bad;name"); err == nil {
		t.Error("Migrate accepted an invalid table name")
	}
}

// CheckDocRows checks the rows docs/sql.md's statements wrote: the plain
// one (plainID) is claimable now, the full one carries its fields and is
// due in 30 s.
func CheckDocRows(t *testing.T, s store.Store, table, plainID string) {
	t.Helper()
	ctx := context.Background()
	full, err := s.Get(ctx, table, "0190f5d2-6a7e-7c4e-9a1b-3f2d8e6c1a00")
	if err != nil {
		t.Fatal(err)
	}
	if full.Event.Tenant != "app1" || full.Event.PartitionKey != "user-42" || full.Event.Type != "WalletGiftDebited" ||
		full.Event.Headers["traceparent"] == "" || string(full.Event.Payload) != `{"gift_id":7,"count":1}` {
		t.Errorf("the full INSERT wrote %+v", full.Event)
	}
	if d := full.AvailableAt.Sub(full.Event.CreatedAt); d < 29*time.Second || d > 31*time.Second {
		t.Errorf("available_at is %v after created_at, want 30s (both UTC from the database clock)", d)
	}
	if age := time.Since(full.Event.CreatedAt); age < -time.Minute || age > time.Minute {
		t.Errorf("created_at %v is not now: a time zone is off", full.Event.CreatedAt)
	}
	recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: 1, Lease: time.Minute, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Event.ID != plainID {
		t.Errorf("claimed %d rows, want only the plain one (the other is delayed)", len(recs))
	}
	st, err := s.Stats(ctx, store.Scope{Table: table, Tenant: "app1"})
	if err != nil || st.Pending != 1 {
		t.Errorf("tenant app1 stats %+v, %v; want 1 pending", st, err)
	}
}

// DetectAndEnqueue checks that herald.DetectDialect names s's database on a
// transaction of its own, and that an Outbox of that dialect enqueues: the
// path herald.Enqueue takes on a bare *sql.Tx from user code.
func DetectAndEnqueue(t *testing.T, s store.Store) {
	t.Helper()
	table := Migrated(t, s, "herald_detect")
	tx, err := s.DB().Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	d, err := herald.DetectDialect(context.Background(), tx)
	if err != nil || d.Name != s.Dialect().Name {
		t.Fatalf("DetectDialect = %v, %v; want %v", d, err, s.Dialect())
	}
	ob, err := herald.NewOutbox(herald.OutboxConfig{Dialect: d, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Enqueue(context.Background(), tx, herald.Event{Topic: "t", Type: "T"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
