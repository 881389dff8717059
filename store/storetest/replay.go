package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

var replayTests = []test{
	{"SelectsByQuery", testReplaySelects},
	{"KeepsIDsAndRecordsHistory", testReplayKeepsIDs},
	{"TimeRange", testReplayTimeRange},
	{"Batches", testReplayBatches},
	{"NewestFirst", testFindNewestFirst},
	{"OrderedKeyStaysOrdered", testReplayOrdered},
	{"RefusesUnfinishedStates", testReplayRefuses},
	{"RetryNow", testRetryNow},
}

// deliverRecords claims every claimable row, marks it delivered and
// returns the rows.
func (h *harness) deliverRecords() []store.Record {
	h.t.Helper()
	c := newClaimer("deliverer")
	recs := h.claim(c, 1000)
	if lost := h.complete(c, recs...); len(lost) != 0 {
		h.t.Fatalf("[complete] lost %v", lost)
	}
	return recs
}

// replayAll replays every row of q in batches of limit and returns the
// replayed ids in order.
func (h *harness) replayAll(q store.EventQuery, limit int) []int64 {
	h.t.Helper()
	r := h.s.Replays()
	var all []int64
	var after int64
	for {
		ids, err := r.ReplayNext(h.ctx, store.ReplayBatch{Query: q, AfterID: after, Limit: limit, By: "tester", Reason: "test"})
		if err != nil {
			h.t.Fatalf("[replay] ReplayNext: %v", err)
		}
		if len(ids) == 0 {
			return all
		}
		all = append(all, ids...)
		after = ids[len(ids)-1]
	}
}

func (h *harness) query(statuses ...store.Status) store.EventQuery {
	return store.EventQuery{Scope: h.scope(), Statuses: statuses}
}

// testReplaySelects: only finished rows of the asked states, types, keys
// and tenant are counted, found and replayed; other rows are left alone.
func testReplaySelects(t *testing.T, h *harness) {
	r := h.s.Replays()
	a1, a2, b1 := event("A"), event("A"), event("B")
	a1.PartitionKey, a2.PartitionKey, b1.PartitionKey = "k1", "k2", "k1"
	a1.Tenant = "t1"
	other := event("A")
	other.Tenant, other.PartitionKey = "t2", "k1"
	h.enqueue(a1, a2, b1, other)
	h.deliverAll()
	dead := event("A")
	dead.PartitionKey = "k1"
	h.enqueue(dead)
	h.killAll("poison")
	pending := event("A")
	pending.PartitionKey = "k1"
	h.enqueue(pending)

	q := h.query(store.StatusDelivered)
	q.Types, q.Keys = []string{"A"}, []string{"k1"}
	n, err := r.CountEvents(h.ctx, q)
	// a1 (tenant t1) and other (tenant t2) match; a2 has another key, b1 another type.
	if err != nil || n != 2 {
		errorf(t, "CountEvents counts the rows the query selects", "count %d, err %v; want 2", n, err)
	}
	q.Tenant = "t1"
	found, err := r.FindEvents(h.ctx, q, 0, 10)
	if err != nil || len(found) != 1 || found[0].Event.ID != a1.ID {
		errorf(t, "FindEvents returns the selected rows (tenant included)", "found %v, err %v; want %s", eventIDs(found), err, a1.ID)
	}
	if got := h.replayAll(q, 10); len(got) != 1 || got[0] != found[0].ID {
		errorf(t, "ReplayNext replays only the selected rows", "replayed %v; want [%d]", got, found[0].ID)
	}
	for id, want := range map[string]store.Status{a1.ID: store.StatusPending, a2.ID: store.StatusDelivered,
		b1.ID: store.StatusDelivered, other.ID: store.StatusDelivered, dead.ID: store.StatusDead, pending.ID: store.StatusPending} {
		if got := h.get(id).Status; got != want {
			errorf(t, "rows outside the query keep their state", "%s is %s; want %s", id, got, want)
		}
	}
	q.Statuses, q.Tenant = []store.Status{store.StatusDead}, ""
	if got := h.replayAll(q, 10); len(got) != 1 || h.get(dead.ID).Status != store.StatusPending {
		errorf(t, "dead rows are replayed when asked", "replayed %v, %s is %s", got, dead.ID, h.get(dead.ID).Status)
	}
}

// testReplayKeepsIDs: a replayed row keeps its row id and event id, is
// claimable at once with attempts reset, and its history says who
// replayed it, from what state.
func testReplayKeepsIDs(t *testing.T, h *harness) {
	r := h.s.Replays()
	ev := event("A")
	h.enqueue(ev)
	before := h.deliverRecords()[0]
	ids := h.replayAll(h.query(store.StatusDelivered, store.StatusDead), 10)
	after := h.get(ev.ID)
	if len(ids) != 1 || ids[0] != before.ID || after.ID != before.ID {
		errorf(t, "a replay keeps the row id", "replayed %v, row %d; want %d", ids, after.ID, before.ID)
	}
	if after.Status != store.StatusPending || after.Attempts != 0 || !after.DeliveredAt.IsZero() {
		errorf(t, "a replayed row is pending, attempts reset, not delivered", "%+v", after)
	}
	c := newClaimer("w")
	again := h.claim(c, 10)
	if len(again) != 1 || again[0].Event.ID != ev.ID || again[0].ID != before.ID {
		t.Fatalf("[a replayed row is claimed again with its event id] claimed %v", eventIDs(again))
	}
	hist, err := r.ReplayHistory(h.ctx, h.table, ev.ID)
	if err != nil || len(hist) != 1 {
		t.Fatalf("[the history records the replay] %v %v", hist, err)
	}
	e := hist[0]
	if e.From != store.StatusDelivered || e.By != "tester" || e.Reason != "test" || e.RowID != before.ID ||
		e.EventID != ev.ID || time.Since(e.At).Abs() > time.Minute {
		errorf(t, "the history says who replayed what, from which state, when", "%+v", e)
	}
	if hist, _ := r.ReplayHistory(h.ctx, h.table, "no-such-event"); len(hist) != 0 {
		errorf(t, "an event never replayed has no history", "%+v", hist)
	}
	checkReplayNumbers(t, h, c, again[0])
}

// testReplayTimeRange: Since is inclusive, Until exclusive, on created_at.
func testReplayTimeRange(t *testing.T, h *harness) {
	r := h.s.Replays()
	first := event("A")
	h.enqueue(first)
	t0 := h.get(first.ID).Event.CreatedAt
	var second herald.Event
	// Enqueue until the database clock has moved past the first commit.
	eventually(t, 5*time.Second, "the database clock moves", func() bool {
		second = event("A")
		h.enqueue(second)
		return h.get(second.ID).Event.CreatedAt.After(t0)
	})
	t1 := h.get(second.ID).Event.CreatedAt
	h.deliverAll()
	q := h.query(store.StatusDelivered)
	q.Until = t1
	early, err := r.FindEvents(h.ctx, q, 0, 100)
	if err != nil || len(early) == 0 || early[0].Event.ID != first.ID || eventIDs(early)[second.ID] {
		errorf(t, "Until is exclusive", "found %v, err %v", eventIDs(early), err)
	}
	q.Until, q.Since = time.Time{}, t1
	late, err := r.FindEvents(h.ctx, q, 0, 100)
	if err != nil || !eventIDs(late)[second.ID] || eventIDs(late)[first.ID] {
		errorf(t, "Since is inclusive", "found %v, err %v", eventIDs(late), err)
	}
}

// testFindNewestFirst: with NewestFirst, FindEvents pages down from the
// newest row: descending ids, each page below the last id of the one
// before.
func testFindNewestFirst(t *testing.T, h *harness) {
	r := h.s.Replays()
	for range 5 {
		h.enqueue(event("A"))
	}
	want := ids(h.deliverRecords())
	slices.Sort(want)
	slices.Reverse(want)
	q := h.query(store.StatusDelivered)
	q.NewestFirst = true
	var got []int64
	for after := int64(0); ; {
		page, err := r.FindEvents(h.ctx, q, after, 2)
		if err != nil {
			errorf(t, "FindEvents newest first", "err %v", err)
			return
		}
		got = append(got, ids(page)...)
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1].ID
	}
	if !slices.Equal(got, want) {
		errorf(t, "FindEvents newest first pages down from the newest row", "got %v, want %v", got, want)
	}
}

// testReplayBatches: batches go in id order, each at most Limit rows, and
// continue after the last id.
func testReplayBatches(t *testing.T, h *harness) {
	r := h.s.Replays()
	for range 5 {
		h.enqueue(event("A"))
	}
	want := ids(h.deliverRecords())
	slices.Sort(want)
	first, err := r.ReplayNext(h.ctx, store.ReplayBatch{Query: h.query(store.StatusDelivered), Limit: 2, By: "b"})
	if err != nil || !slices.Equal(first, want[:2]) {
		errorf(t, "a batch replays the first Limit rows in id order", "got %v, err %v; want %v", first, err, want[:2])
	}
	rest := h.replayAll(h.query(store.StatusDelivered), 2)
	if !slices.Equal(rest, want[2:]) {
		errorf(t, "later batches continue in id order until none are left", "got %v; want %v", rest, want[2:])
	}
}

// testReplayOrdered: replayed rows of a key are claimed by an ordered lane
// in their original order, before the key's later pending rows.
func testReplayOrdered(t *testing.T, h *harness) {
	evs := keyed("K", 3)
	h.enqueue(evs...)
	h.deliverAll()
	later := keyed("K", 1)[0]
	h.enqueue(later)
	q := h.query(store.StatusDelivered)
	q.EventIDs = []string{evs[1].ID, evs[0].ID}
	if got := h.replayAll(q, 1); len(got) != 2 {
		t.Fatalf("[replay by event id] replayed %v", got)
	}
	w1 := newClaimer("w1")
	first := h.claimWith(w1, ordered(1))
	if len(first) != 1 || first[0].Event.ID != evs[0].ID {
		errorf(t, "an ordered lane claims the key's oldest replayed row first", "claimed %v", eventIDs(first))
	}
	if blocked := h.claimWith(newClaimer("w2"), ordered(10)); len(blocked) != 0 {
		errorf(t, "the key's later rows wait while its replayed head is in flight", "claimed %v", eventIDs(blocked))
	}
	if lost := h.complete(w1, first...); len(lost) != 0 {
		t.Fatalf("[complete] lost %v", lost)
	}
	rest := h.claimWith(newClaimer("w3"), ordered(10))
	got := make([]string, len(rest))
	for i, r := range rest {
		got[i] = r.Event.ID
	}
	if !slices.Equal(got, []string{evs[1].ID, later.ID}) {
		errorf(t, "then the other replayed row, then the later pending row", "claimed %v; want [%s %s]", got, evs[1].ID, later.ID)
	}
}

// testReplayRefuses: pending and in-flight rows cannot be replayed, and a
// query without states is refused with a clear error.
func testReplayRefuses(t *testing.T, h *harness) {
	r := h.s.Replays()
	for _, q := range []store.EventQuery{h.query(), h.query(store.StatusPending), h.query(store.StatusInFlight)} {
		if _, err := r.ReplayNext(h.ctx, store.ReplayBatch{Query: q, Limit: 10}); err == nil {
			errorf(t, "only delivered and dead rows can be replayed", "statuses %v accepted", q.Statuses)
		}
	}
}

// testRetryNow: a pending row waiting out a delay or backoff becomes due
// at once; in-flight and finished rows are left alone.
func testRetryNow(t *testing.T, h *harness) {
	r := h.s.Replays()
	delayed, done := event("A"), event("A")
	h.enqueue(done)
	h.deliverAll()
	delayed.AvailableAt = time.Now().Add(time.Hour)
	h.enqueue(delayed)
	if recs := h.claim(newClaimer("early"), 10); len(recs) != 0 {
		t.Fatalf("[a delayed row is not claimable] claimed %v", eventIDs(recs))
	}
	n, err := r.RetryNow(h.ctx, h.scope(), []string{delayed.ID, done.ID, "no-such-event"})
	if err != nil || n != 1 {
		errorf(t, "RetryNow changes only the pending rows named", "changed %d, err %v; want 1", n, err)
	}
	if recs := h.claim(newClaimer("w"), 10); len(recs) != 1 || recs[0].Event.ID != delayed.ID {
		errorf(t, "a row retried now is claimable at once", "claimed %v", eventIDs(recs))
	}
	if st := h.get(done.ID).Status; st != store.StatusDelivered {
		errorf(t, "RetryNow leaves finished rows alone", "%s is %s", done.ID, st)
	}
}

// checkReplayNumbers: a replayed row, claimed as rec by c, carries the
// replay's number in its receipt (1), and the next replay of it, once the
// relay delivered it keeping that number, counts on (2), so that each
// replay gets a dedupe id of its own at the broker.
func checkReplayNumbers(t *testing.T, h *harness, c claimer, rec store.Record) {
	if rec.Receipt.Replay != 1 {
		errorf(t, "a replayed row's receipt holds the replay's number", "claimed receipt %+v; want replay 1", rec.Receipt)
	}
	lost, err := h.s.Complete(h.ctx, c.fence(h), []store.Delivery{{ID: rec.ID,
		Receipt: store.Receipt{MessageID: "m", Replay: rec.Receipt.Replay}}})
	if err != nil || len(lost) != 0 {
		t.Fatalf("[complete] %v %v", lost, err)
	}
	h.replayAll(h.query(store.StatusDelivered), 10)
	if got := h.claim(newClaimer("w2"), 10); len(got) != 1 || got[0].Receipt.Replay != 2 {
		errorf(t, "a second replay counts on from the first", "claimed %v; want one row with replay 2", got)
	}
}
