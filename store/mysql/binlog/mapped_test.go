package binlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

// Rule: on a mapped table (datetime time columns here) the binlog reader
// builds records from the mapped columns, including created_at; a failed
// event is handed over in the retry status, with its attempt and error
// counted, delivered ones are marked in the status column when recorded,
// and the lane's polling workers claim the handed-over row only, never a
// fresh one the reader will publish.
func TestAdoptLogBinlogHandOverInRetryStatus(t *testing.T) {
	e := newBinlogEnv(t)
	ctx := context.Background()
	e.exec(`CREATE TABLE adoptlog_wallet (event_id VARCHAR(64) PRIMARY KEY, event_type VARCHAR(64) NOT NULL,
  user_id BIGINT NOT NULL, payload_json TEXT NOT NULL, created_at DATETIME(6) NOT NULL,
  status VARCHAR(16) NOT NULL DEFAULT 'pending', retry_count INT NOT NULL DEFAULT 0,
  next_retry_at DATETIME(6) NOT NULL DEFAULT '1970-01-01', lock_until DATETIME(6) NOT NULL DEFAULT '1970-01-01',
  worker_id VARCHAR(128) NOT NULL DEFAULT '', last_error TEXT)`)
	m := store.Mapping{
		Columns: store.Columns{ID: "event_id", Type: "event_type", Key: "user_id", Payload: "payload_json",
			CreatedAt: "created_at", Status: "status", Attempts: "retry_count", NextAttempt: "next_retry_at",
			LeaseUntil: "lock_until", LeaseOwner: "worker_id", LastError: "last_error"},
		Statuses: store.Statuses{Pending: store.StatusValues{"pending", "retryable"}, InFlight: "delivering",
			Delivered: "delivered", Dead: "dead"},
		TimeUnit: store.TimeDatetime,
	}
	if err := e.s.MapTable("adoptlog_wallet", m); err != nil {
		t.Fatal(err)
	}
	p := store.LogParams{Scope: store.Scope{Table: "adoptlog_wallet"}, Lane: "adoptlog", Owner: "test", Lease: 10 * time.Second}
	st, err := e.s.OpenLog(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	insert := func(id string) {
		e.exec(`INSERT INTO adoptlog_wallet (event_id, event_type, user_id, payload_json, created_at)
VALUES (?, 'Debited', 7, '{}', '2026-12-05 01:02:03.456789')`, id)
	}
	for _, id := range []string{"a", "b", "c"} {
		insert(id)
	}
	var recs []store.Record
	var end uint64
	for deadline := time.Now().Add(30 * time.Second); len(recs) < 3 && time.Now().Before(deadline); {
		b, err := st.Next(ctx, 100, 500*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		recs, end = append(recs, b.Records...), b.End
	}
	if len(recs) != 3 {
		t.Fatalf("read %d records, want 3", len(recs))
	}
	r := recs[0]
	if want := time.Date(2026, 12, 5, 1, 2, 3, 456789000, time.UTC); r.Event.ID != "a" || r.Event.Type != "Debited" ||
		r.Event.PartitionKey != "7" || !r.Event.CreatedAt.Equal(want) || string(r.Event.Payload) != "{}" {
		t.Fatalf("record of row a: %+v, want created_at %v", r.Event, want)
	}
	if err := e.s.HandOver(ctx, p.Table, p.Lane, []store.LogFailure{{Record: r, Error: "broker said no", Attempted: true}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Record(ctx, end, []store.Delivery{{ID: recs[1].ID}, {ID: recs[2].ID}}); err != nil {
		t.Fatal(err)
	}
	var status, lastErr string
	var attempts int
	if err := e.db.QueryRow("SELECT status, retry_count, last_error FROM adoptlog_wallet WHERE event_id = 'a'").
		Scan(&status, &attempts, &lastErr); err != nil || status != "retryable" || attempts != 1 || lastErr != "broker said no" {
		t.Fatalf("row a: %s, %d attempts, %q (%v); want retryable, 1, the error", status, attempts, lastErr, err)
	}
	var delivered int
	_ = e.db.QueryRow("SELECT COUNT(*) FROM adoptlog_wallet WHERE status = 'delivered'").Scan(&delivered)
	if delivered != 2 {
		t.Fatalf("%d rows delivered, want b and c", delivered)
	}
	insert("d") // fresh: the reader's, not the polling workers'
	claimed, err := e.s.Claim(ctx, store.ClaimParams{Scope: p.Scope, Owner: "w", Token: 1, Lease: time.Minute, Limit: 10, HandedOver: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 1 || claimed[0].Event.ID != "a" || claimed[0].Attempts != 2 {
		t.Fatalf("the polling workers claimed %+v, want only row a, attempt 2", claimed)
	}
}
