package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

// Rule: on a mapped table the logical-replication reader decodes the
// mapped columns from pgoutput's binary tuples through their types: a
// timestamptz created_at as its time, a BIGINT key as its digits, and a
// body template's BIGINT and NUMERIC columns as JSON numbers, its text
// columns and NULLs as strings and null; a header column as a header.
func TestAdoptLogLogicalDecodesMappedTypes(t *testing.T) {
	e := newLogicalEnv(t)
	ctx := context.Background()
	if _, err := e.db.Exec(`CREATE TABLE adoptlog_wallet (event_id TEXT PRIMARY KEY, event_type TEXT NOT NULL,
  user_id BIGINT NOT NULL, amount NUMERIC(12, 2) NOT NULL, note TEXT, payload_json TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL, status TEXT NOT NULL DEFAULT 'pending', retry_count INT NOT NULL DEFAULT 0,
  next_retry_at TIMESTAMPTZ NOT NULL DEFAULT now(), lock_until TIMESTAMPTZ NOT NULL DEFAULT now(),
  worker_id TEXT NOT NULL DEFAULT '', last_error TEXT)`); err != nil {
		t.Fatal(err)
	}
	m := store.Mapping{
		Columns: store.Columns{ID: "event_id", Type: "event_type", Key: "user_id", Payload: "payload_json",
			CreatedAt: "created_at", Status: "status", Attempts: "retry_count", NextAttempt: "next_retry_at",
			LeaseUntil: "lock_until", LeaseOwner: "worker_id", LastError: "last_error"},
		Statuses: store.Statuses{Pending: store.StatusValues{"pending", "retryable"}, InFlight: "delivering",
			Delivered: "delivered", Dead: "dead"},
		TimeUnit:      store.TimeDatetime,
		HeaderColumns: map[string]string{"x-user": "user_id"},
		Body: []store.BodyField{{Field: "id", Column: "event_id"}, {Field: "user", Column: "user_id"},
			{Field: "amount", Column: "amount"}, {Field: "note", Column: "note"}, {Field: "payload", Payload: store.PayloadRaw}},
	}
	if err := e.s.MapTable("adoptlog_wallet", m); err != nil {
		t.Fatal(err)
	}
	st, err := e.s.OpenLog(ctx, store.LogParams{Scope: store.Scope{Table: "adoptlog_wallet"}, Lane: "adoptlog", Owner: "test", Lease: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := e.db.Exec(`INSERT INTO adoptlog_wallet (event_id, event_type, user_id, amount, payload_json, created_at)
VALUES ('a', 'Debited', 9007199254740993, -12.50, '{"k":[1]}', '2026-12-05 01:02:03.456789+00')`); err != nil {
		t.Fatal(err)
	}
	var recs []store.Record
	for deadline := time.Now().Add(30 * time.Second); len(recs) == 0 && time.Now().Before(deadline); {
		b, err := st.Next(ctx, 100, 500*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		recs = b.Records
	}
	if len(recs) != 1 {
		t.Fatalf("read %d records, want 1", len(recs))
	}
	ev := recs[0].Event
	want := time.Date(2026, 12, 5, 1, 2, 3, 456789000, time.UTC)
	if ev.ID != "a" || ev.Type != "Debited" || ev.PartitionKey != "9007199254740993" || !ev.CreatedAt.Equal(want) ||
		ev.Headers["x-user"] != "9007199254740993" {
		t.Fatalf("record: %+v, want created_at %v", ev, want)
	}
	if body := `{"id":"a","user":9007199254740993,"amount":-12.50,"note":null,"payload":{"k":[1]}}`; string(ev.Payload) != body {
		t.Fatalf("body\n got %s\nwant %s", ev.Payload, body)
	}
}
