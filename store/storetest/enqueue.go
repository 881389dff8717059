package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// PlainInsert is the INSERT that any program can use to enqueue, naming only
// the required columns (docs/sql.md shows it per database). Its parameters
// are event_id, topic, event_type and payload.
func PlainInsert(d herald.Dialect, table string) string {
	return d.Rebind("INSERT INTO " + table + " (event_id, topic, event_type, payload) VALUES (?, ?, ?, ?)")
}

var enqueueTests = []test{
	{"CommitVisible", testCommitVisible},
	{"RollbackLeavesNothing", testRollback},
	{"IdempotentEventID", testIdempotent},
	{"PlainInsert", testPlainInsert},
	{"GeneratedEventID", testGeneratedEventID},
	{"RoundTrip", testRoundTrip},
	{"Delayed", testDelayed},
	{"TenantIsolation", testTenant},
	{"TypeFilters", testTypeFilters},
	{"ReservedHeaderRefused", testReservedHeaderRefused},
}

func testCommitVisible(t *testing.T, h *harness) {
	ev := event("Created")
	h.enqueue(ev)
	r := h.get(ev.ID)
	if r.Status != store.StatusPending || r.Attempts != 0 {
		errorf(t, "commit makes an event visible as pending", "status %q attempts %d", r.Status, r.Attempts)
	}
	if st := h.stats(); st.Pending != 1 {
		errorf(t, "commit makes an event visible as pending", "stats %+v, want 1 pending", st)
	}
}

func testRollback(t *testing.T, h *harness) {
	ev := event("Created")
	tx, err := h.s.DB().BeginTx(h.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.ob.Enqueue(h.ctx, tx, ev); err != nil {
		t.Fatalf("[enqueue] %v", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	h.notFound("rollback leaves nothing", ev.ID)
	if recs := h.claim(newClaimer("w"), 10); len(recs) != 0 {
		errorf(t, "rollback leaves nothing", "claimed %d rows", len(recs))
	}
}

func testIdempotent(t *testing.T, h *harness) {
	ev := event("Created")
	h.enqueue(ev)
	again := ev
	again.Payload = []byte(`{"n":2}`)
	if err := h.tryEnqueue(h.ob, again, event("Other")); err != nil {
		errorf(t, "enqueue of an existing event id is a no-op", "second Enqueue: %v", err)
	}
	if r := h.get(ev.ID); string(r.Event.Payload) != `{"n":1}` {
		errorf(t, "enqueue of an existing event id is a no-op", "payload became %q", r.Event.Payload)
	}
	if st := h.stats(); st.Pending != 2 {
		errorf(t, "enqueue of an existing event id is a no-op", "stats %+v, want 2 pending", st)
	}
}

func testPlainInsert(t *testing.T, h *harness) {
	id := herald.NewID()
	_, err := h.s.DB().ExecContext(h.ctx, PlainInsert(h.s.Dialect(), h.table), id, "orders", "OrderPlaced", []byte("{}"))
	if err != nil {
		t.Fatalf("[a plain INSERT of the required columns works] %v", err)
	}
	r := h.get(id)
	const rule = "a plain INSERT gets defaults for every other column"
	if r.Status != store.StatusPending || r.Attempts != 0 || r.Event.Tenant != "" || r.Event.PartitionKey != "" ||
		len(r.Event.Headers) != 0 || r.Event.CreatedAt.IsZero() {
		errorf(t, rule, "got %+v", r)
	}
	recs := h.claim(newClaimer("w"), 10)
	if len(recs) != 1 || recs[0].Event.ID != id || string(recs[0].Event.Payload) != "{}" {
		errorf(t, "a plainly inserted row is claimable at once", "claimed %+v", recs)
	}
}

// testReservedHeaderRefused: a header copied from an incoming CloudEvent
// (Ce-Id, Ce-Type) would travel beside the event's own ce-id and ce-type;
// Enqueue refuses it, naming it, and writes nothing of the batch.
func testReservedHeaderRefused(t *testing.T, h *harness) {
	const rule = "a header Herald sets itself is refused at enqueue"
	good := event("Kept")
	forwarded := event("Forwarded")
	forwarded.Headers = map[string]string{"Ce-Id": "forwarded-1", "x-app": "a"}
	err := h.tryEnqueue(h.ob, good, forwarded)
	if !errors.Is(err, herald.ErrReservedHeader) || !strings.Contains(err.Error(), `"Ce-Id"`) {
		errorf(t, rule, "Enqueue = %v, want herald.ErrReservedHeader naming \"Ce-Id\"", err)
	}
	h.notFound(rule, good.ID)
	h.notFound(rule, forwarded.ID)
}

func testGeneratedEventID(t *testing.T, h *harness) {
	const rule = "event_id has a unique default"
	q := "INSERT INTO " + h.table + " (topic, event_type) VALUES ('orders', 'OrderPlaced')"
	for range 2 {
		if _, err := h.s.DB().ExecContext(h.ctx, q); err != nil {
			t.Fatalf("[%s] %v", rule, err)
		}
	}
	recs := h.claim(newClaimer("w"), 10)
	if len(recs) != 2 || recs[0].Event.ID == "" || recs[0].Event.ID == recs[1].Event.ID {
		errorf(t, rule, "claimed %+v", recs)
	}
}

func testRoundTrip(t *testing.T, h *harness) {
	payload := make([]byte, 256)
	for i := range payload {
		payload[i] = byte(i)
	}
	ev := herald.Event{ID: herald.NewID(), Tenant: "app1", Topic: "room", Type: "GiftSent", PartitionKey: "room-7",
		Headers: map[string]string{"traceparent": "00-abc-def-01", "ключ": "значение ✓", "empty": ""}, Payload: payload}
	h.enqueue(ev)
	recs := h.claim(newClaimer("w"), 10)
	const rule = "headers and payload round-trip"
	if len(recs) != 1 {
		t.Fatalf("[%s] claimed %d rows", rule, len(recs))
	}
	got := recs[0].Event
	if got.ID != ev.ID || got.Tenant != ev.Tenant || got.Topic != ev.Topic || got.Type != ev.Type ||
		got.PartitionKey != ev.PartitionKey || string(got.Payload) != string(payload) {
		errorf(t, rule, "got %+v, want %+v", got, ev)
	}
	for k, v := range ev.Headers {
		if got.Headers[k] != v {
			errorf(t, rule, "header %q = %q, want %q", k, got.Headers[k], v)
		}
	}
}

func testDelayed(t *testing.T, h *harness) {
	later := event("Later")
	later.AvailableAt = time.Now().Add(time.Hour)
	soon := event("Soon")
	soon.AvailableAt = time.Now().Add(300 * time.Millisecond)
	h.enqueue(later, soon)
	if recs := h.claim(newClaimer("w"), 10); len(recs) != 0 {
		// soon may be due already on a slow machine; later never is.
		for _, r := range recs {
			if r.Event.ID == later.ID {
				errorf(t, "a row is not claimable before available_at", "claimed the row due in an hour")
			}
		}
		return
	}
	var got []store.Record
	eventually(t, 5*time.Second, "a delayed row becomes claimable at available_at", func() bool {
		got = h.claim(newClaimer("w"), 10)
		return len(got) > 0
	})
	if len(got) != 1 || got[0].Event.ID != soon.ID {
		errorf(t, "a row is not claimable before available_at", "claimed %+v", got)
	}
}

func testTenant(t *testing.T, h *harness) {
	a, b := event("T"), event("T")
	a.Tenant, b.Tenant = "alpha", "beta"
	h.enqueue(a, b)
	recs := h.claimWith(newClaimer("w"), store.ClaimParams{Scope: store.Scope{Tenant: "alpha"}})
	if len(recs) != 1 || recs[0].Event.ID != a.ID {
		errorf(t, "a tenant-scoped claim sees only its tenant", "claimed %+v", recs)
	}
	st, err := h.s.Stats(h.ctx, store.Scope{Table: h.table, Tenant: "beta"})
	if err != nil || st.Pending != 1 || st.InFlight != 0 {
		errorf(t, "stats are scoped by tenant", "stats %+v, err %v", st, err)
	}
}

func testTypeFilters(t *testing.T, h *harness) {
	a, b, c := event("A"), event("B"), event("C")
	h.enqueue(a, b, c)
	got := h.claimWith(newClaimer("w"), store.ClaimParams{Scope: store.Scope{IncludeTypes: []string{"A", "Z"}}})
	if len(got) != 1 || got[0].Event.ID != a.ID {
		errorf(t, "include_types limits the claim", "claimed %+v", got)
	}
	got = h.claimWith(newClaimer("w"), store.ClaimParams{Scope: store.Scope{ExcludeTypes: []string{"B"}}})
	if len(got) != 1 || got[0].Event.ID != c.ID {
		errorf(t, "exclude_types leaves types out", "claimed %+v", got)
	}
	st, err := h.s.Stats(h.ctx, store.Scope{Table: h.table, IncludeTypes: []string{"B"}})
	if err != nil || st.Pending != 1 || st.InFlight != 0 {
		errorf(t, "stats honour type filters", "stats %+v, err %v", st, err)
	}
}
