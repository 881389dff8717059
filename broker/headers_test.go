package broker_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// prefixes are every binding's attribute prefix, as the adapters pass them.
var prefixes = []string{"ce-", "ce_", "CE_", "cloudEvents_", "cloudEvents:"}

// forwarded returns a message whose row copied an incoming CloudEvent's
// attributes, in several spellings and under several bindings' prefixes.
func forwarded(attempt int) broker.Message {
	return broker.Message{Attempt: attempt, Destination: "d", Event: herald.Event{
		ID: "row-1", Topic: "t", Type: "Counted", PartitionKey: "k",
		Headers: map[string]string{
			"Ce-Id": "forwarded-1", "CE-ID": "forwarded-2", "Ce-Type": "Forwarded", "ce_id": "forwarded-3",
			"cloudEvents_type": "Forwarded", "Nats-Msg-Id": "forwarded-1", "Traceparent": "00-x", "x-app": "a",
		},
	}}
}

// lookup returns every value of h whose name equals name case-insensitively.
func lookup(h map[string]string, name string) []string {
	var out []string
	for k, v := range h {
		if strings.EqualFold(k, name) {
			out = append(out, v)
		}
	}
	return out
}

// Rule: a message built from a row with colliding headers carries exactly
// one id and one type under every binding's prefix, the row's; the copied
// ones travel renamed; the result is the same on every call.
func TestHeadersOwnedWin(t *testing.T) {
	for _, prefix := range prefixes {
		first := broker.Headers(forwarded(2), prefix, "")
		for range 50 {
			h := broker.Headers(forwarded(2), prefix, "")
			if ids := lookup(h, prefix+"id"); len(ids) != 1 || ids[0] != "row-1" {
				t.Fatalf("prefix %s: id headers %v, want exactly [row-1] (headers %v)", prefix, ids, h)
			}
			if types := lookup(h, prefix+"type"); len(types) != 1 || types[0] != "Counted" {
				t.Fatalf("prefix %s: type headers %v, want exactly [Counted] (headers %v)", prefix, types, h)
			}
			for k, v := range h {
				if first[k] != v || len(h) != len(first) {
					t.Fatalf("prefix %s: headers differ between calls: %v and %v", prefix, first, h)
				}
				if why := herald.ReservedHeader(k); why != "" && !strings.HasPrefix(k, prefix) {
					t.Fatalf("prefix %s: reserved user header %q (%s) sent as is", prefix, k, why)
				}
			}
		}
		want := map[string]string{
			"x-herald-original-ce-id":   "forwarded-2", // "CE-ID" sorts before "Ce-Id"
			"x-herald-original-ce-type": "Forwarded", "x-herald-original-ce_id": "forwarded-3",
			"x-herald-original-cloudevents_type": "Forwarded", "x-herald-original-nats-msg-id": "forwarded-1",
			"x-herald-original-traceparent": "00-x", "x-app": "a",
		}
		for k, v := range want {
			if first[k] != v {
				t.Errorf("prefix %s: header %s = %q, want %q (headers %v)", prefix, k, first[k], v, first)
			}
		}
	}
}

// Rule: every attribute Headers sets is a reserved name, so no user header
// can ever stand beside it.
func TestHeadersSetOnlyReservedAttributes(t *testing.T) {
	m := broker.Message{Event: herald.Event{ID: "i", Topic: "t", Type: "T", PartitionKey: "k", Tenant: "a"}}
	m.Event.CreatedAt = m.Event.CreatedAt.AddDate(2000, 0, 0)
	for _, prefix := range prefixes {
		for k := range broker.Headers(m, prefix, "src") {
			if herald.ReservedHeader(k) == "" {
				t.Errorf("prefix %s: Headers sets %q, which ReservedHeader does not reserve", prefix, k)
			}
		}
	}
}

// Rule: the rename is logged once per event: on the first attempt, not on
// retries.
func TestHeadersWarnOncePerEvent(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	for attempt := 1; attempt <= 3; attempt++ {
		broker.Headers(forwarded(attempt), "ce-", "")
	}
	if n := strings.Count(buf.String(), "event_id=row-1"); n != 1 || !strings.Contains(buf.String(), "CE-ID -> x-herald-original-ce-id") ||
		!strings.Contains(buf.String(), `dropped=Ce-Id`) {
		t.Fatalf("%d warnings for three attempts, want 1 naming the renames:\n%s", n, buf.String())
	}
}

// Rule: a subscriber reads each attribute deterministically whatever the
// case: the exact spelling wins, else the one that sorts first.
func TestEventFromHeadersDeterministic(t *testing.T) {
	withExact := map[string]string{"Ce-Id": "a", "ce-id": "row-1", "CE-ID": "b", "cE-iD": "c", "Ce-Type": "F", "ce-type": "T"}
	withoutExact := map[string]string{"Ce-Id": "a", "CE-ID": "row-1", "cE-iD": "c", "ce-ID": "d"}
	for range 200 {
		if ev := broker.EventFromHeaders(withExact, "ce-", nil); ev.ID != "row-1" || ev.Type != "T" {
			t.Fatalf("with the exact spelling present: id %q type %q, want row-1 and T", ev.ID, ev.Type)
		}
		if ev := broker.EventFromHeaders(withoutExact, "ce-", nil); ev.ID != "row-1" {
			t.Fatalf("without the exact spelling: id %q, want row-1 (CE-ID sorts first)", ev.ID)
		}
	}
}

// Rule: the first publication's dedupe id is the event id; the n-th replay
// has its own, so a broker's duplicate window does not drop it.
func TestDedupeIDPerReplay(t *testing.T) {
	m := broker.Message{Event: herald.Event{ID: "e1"}}
	if got := broker.DedupeID(m); got != "e1" {
		t.Errorf("first publication: %q; want the event id", got)
	}
	m.Replay = 2
	if got := broker.DedupeID(m); got != "e1/replay-2" {
		t.Errorf("second replay: %q; want e1/replay-2", got)
	}
}
