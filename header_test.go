package herald_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/sqlite"
)

// Rule: a user header that equals, case-insensitively, a header Herald sets
// itself is refused at enqueue with an error naming it, under every
// binding's prefix, through Outbox.Enqueue and herald.Enqueue alike; the
// rest of the batch is not written.
func TestEnqueueRefusesReservedHeaders(t *testing.T) {
	s := openSQLite(t)
	ob, _ := herald.NewOutbox(herald.OutboxConfig{Dialect: sqlite.Dialect})
	for _, name := range []string{"Ce-Id", "ce-id", "CE-TYPE", "ce_id", "CE_Type", "cloudEvents_id", "cloudEvents:type",
		"ce-source", "Ce-Specversion", "ce-time", "ce-subject", "ce-tenant", "ce-topic", "CE_contenttype",
		"Nats-Msg-Id", "nats-msg-id", "Nats-Expected-Stream", "webhook-id", "Webhook-Signature", "Traceparent", "TRACESTATE"} {
		bad := herald.Event{ID: "bad", Topic: "t", Type: "T", Headers: map[string]string{name: "forwarded-1", "x-app": "a"}}
		for api, enqueue := range map[string]func(tx *sql.Tx) error{
			"Outbox.Enqueue": func(tx *sql.Tx) error {
				return ob.Enqueue(context.Background(), tx, herald.Event{ID: "ok", Topic: "t", Type: "T"}, bad)
			},
			"herald.Enqueue": func(tx *sql.Tx) error {
				return herald.Enqueue(context.Background(), tx, herald.Event{ID: "ok", Topic: "t", Type: "T"}, bad)
			},
		} {
			err := inTx(t, s.DB(), enqueue)
			if !errors.Is(err, herald.ErrReservedHeader) || !errors.Is(err, herald.ErrInvalidEvent) ||
				!strings.Contains(err.Error(), `"`+name+`"`) {
				t.Fatalf("%s with header %q: error %v; want ErrReservedHeader naming the header", api, name, err)
			}
		}
	}
	for _, id := range []string{"ok", "bad"} {
		if _, err := s.Get(context.Background(), herald.DefaultTable, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("event %s of a refused batch was written: %v", id, err)
		}
	}
}

// Rule: names that only look like reserved ones are free, and the error
// names every reserved header of an event, in a stable order.
func TestReservedHeaderBoundaries(t *testing.T) {
	for _, name := range []string{"traceparent", "tracestate", "ce-datacontenttype", "ce-idx", "x-ce-id", "id", "type",
		"content-type", "x-herald-original-ce-id", "natsy", "webhook-other", "Forwarded-Ce-Id"} {
		if why := herald.ReservedHeader(name); why != "" {
			t.Errorf("ReservedHeader(%q) = %q, want free", name, why)
		}
	}
	s := openSQLite(t)
	ev := herald.Event{ID: "two", Topic: "t", Type: "T", Headers: map[string]string{"Ce-Type": "Forwarded", "Ce-Id": "forwarded-1"}}
	err := inTx(t, s.DB(), func(tx *sql.Tx) error { return herald.Enqueue(context.Background(), tx, ev) })
	want := `herald: invalid event: event "two": reserved header: "Ce-Id" is the CloudEvents id attribute, which Herald sets from the event; ` +
		`"Ce-Type" is the CloudEvents type attribute, which Herald sets from the event; send such a value under another name (e.g. x-herald-original-ce-id)`
	if err == nil || err.Error() != want {
		t.Fatalf("error\n%v\nwant\n%s", err, want)
	}
}
