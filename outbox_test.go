package herald_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/sqlite"
)

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "h.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background(), herald.DefaultTable); err != nil {
		t.Fatal(err)
	}
	return s
}

func inTx(t *testing.T, db *sql.DB, f func(tx *sql.Tx) error) error {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Rule: the W3C trace context of the caller's span travels in the headers.
func TestEnqueueCapturesTraceContext(t *testing.T) {
	s := openSQLite(t)
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	err := inTx(t, s.DB(), func(tx *sql.Tx) error {
		return herald.Enqueue(ctx, tx, herald.Event{ID: "traced", Topic: "t", Type: "T", Headers: map[string]string{"a": "b"}})
	})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.Get(context.Background(), herald.DefaultTable, "traced")
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Event.Headers["traceparent"]; got != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" || rec.Event.Headers["a"] != "b" {
		t.Fatalf("headers = %v; want the span's traceparent beside the user header", rec.Event.Headers)
	}
}

// Rule: herald.Enqueue finds the database kind by itself and fills in ids.
func TestEnqueueDetectsDialectAndGeneratesUUIDv7(t *testing.T) {
	s := openSQLite(t)
	err := inTx(t, s.DB(), func(tx *sql.Tx) error {
		d, err := herald.DetectDialect(context.Background(), tx)
		if err != nil || d.Name != "sqlite" {
			t.Fatalf("DetectDialect = %v, %v; want sqlite", d, err)
		}
		return herald.Enqueue(context.Background(), tx, herald.Event{Topic: "t", Type: "T"})
	})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := s.List(context.Background(), store.ListParams{Scope: store.Scope{Table: herald.DefaultTable}, Status: store.StatusPending, Limit: 10})
	if err != nil || len(recs) != 1 {
		t.Fatalf("list: %v %v", recs, err)
	}
	if id := recs[0].Event.ID; len(id) != 36 || id[14] != '7' {
		t.Fatalf("generated id %q is not a UUIDv7", id)
	}
}

// Rule: bad events are refused with an error naming the field, and nothing
// of the transaction's batch is written.
func TestEnqueueRejectsBadEvents(t *testing.T) {
	s := openSQLite(t)
	ob, _ := herald.NewOutbox(herald.OutboxConfig{Dialect: sqlite.Dialect, MaxPayload: 10})
	cases := []struct {
		ev   herald.Event
		want error
		text string
	}{
		{herald.Event{Type: "T"}, herald.ErrInvalidEvent, "topic is empty"},
		{herald.Event{Topic: "t"}, herald.ErrInvalidEvent, "type is empty"},
		{herald.Event{Topic: "t", Type: "T", Payload: make([]byte, 11)}, herald.ErrPayloadTooLarge, "limit is 10"},
		{herald.Event{ID: strings.Repeat("x", 65), Topic: "t", Type: "T"}, herald.ErrInvalidEvent, "longer than 64"},
	}
	for _, c := range cases {
		err := inTx(t, s.DB(), func(tx *sql.Tx) error {
			return ob.Enqueue(context.Background(), tx, herald.Event{ID: "ok", Topic: "t", Type: "T"}, c.ev)
		})
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Fatalf("error %v; want %v mentioning %q", err, c.want, c.text)
		}
	}
	if _, err := s.Get(context.Background(), herald.DefaultTable, "ok"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a good event of a refused batch was written: %v", err)
	}
	if !herald.IsPermanent(herald.ErrPayloadTooLarge) || herald.IsPermanent(errors.New("x")) {
		t.Fatalf("IsPermanent must hold for ErrPayloadTooLarge only here")
	}
}

func TestNewOutboxRejectsHostileTableNames(t *testing.T) {
	for _, name := range []string{"outbox;DROP TABLE x", `a"b`, "a`b", "оutbox", strings.Repeat("a", 200), "1abc", ""} {
		if name == "" {
			continue // empty means the default table
		}
		if _, err := herald.NewOutbox(herald.OutboxConfig{Table: name, Dialect: sqlite.Dialect}); err == nil {
			t.Errorf("table name %q was accepted", name)
		}
	}
}
