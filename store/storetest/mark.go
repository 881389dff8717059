package storetest

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

var markTests = []test{
	{"Complete", testComplete},
	{"RetryBackoff", testRetryBackoff},
	{"Release", testRelease},
	{"Discard", testDiscard},
	{"EmptyBatches", testEmptyBatches},
}

func testComplete(t *testing.T, h *harness) {
	ev := event("A")
	h.enqueue(ev)
	c := newClaimer("w")
	recs := h.claim(c, 10)
	receipt := store.Receipt{Stream: "EVENTS", Sequence: 42, MessageID: "m-1", Duplicate: true}
	lost, err := h.s.Complete(h.ctx, c.fence(h), []store.Delivery{{ID: recs[0].ID, Receipt: receipt}, {ID: -7}})
	if err != nil || !sameIDs(lost, []int64{-7}) {
		errorf(t, "Complete reports unknown ids as lost", "lost %v err %v", lost, err)
	}
	r := h.get(ev.ID)
	if r.Status != store.StatusDelivered || r.DeliveredAt.IsZero() || r.Receipt != receipt {
		errorf(t, "Complete marks delivered and keeps the receipt", "got %+v", r)
	}
	if again := h.claim(newClaimer("w2"), 10); len(again) != 0 {
		errorf(t, "a delivered row is never claimed again", "claimed %v", ids(again))
	}
}

func testRetryBackoff(t *testing.T, h *harness) {
	slow, fast := event("Slow"), event("Fast")
	h.enqueue(slow, fast)
	c := newClaimer("w")
	recs := h.claim(c, 10)
	if len(recs) != 2 {
		t.Fatalf("[claim] claimed %d rows", len(recs))
	}
	byEvent := map[string]int64{recs[0].Event.ID: recs[0].ID, recs[1].Event.ID: recs[1].ID}
	lost, err := h.s.Retry(h.ctx, c.fence(h), []store.Failure{
		{ID: byEvent[slow.ID], Error: "broker down", RetryIn: time.Hour},
		{ID: byEvent[fast.ID], Error: "timeout", RetryIn: 200 * time.Millisecond},
	})
	if err != nil || len(lost) != 0 {
		t.Fatalf("[retry] lost %v err %v", lost, err)
	}
	r := h.get(slow.ID)
	if r.Status != store.StatusPending || r.LastError != "broker down" || r.Attempts != 1 {
		errorf(t, "Retry puts the row back to pending with its error", "got %+v", r)
	}
	if st := h.stats(); st.Retrying != 2 || st.Pending != 0 {
		errorf(t, "stats count retried rows as retrying", "stats %+v", st)
	}
	var got []store.Record
	eventually(t, 5*time.Second, "a retried row is claimable after its backoff", func() bool {
		got = h.claim(c, 10)
		return len(got) > 0
	})
	if len(got) != 1 || got[0].Event.ID != fast.ID || got[0].Attempts != 2 {
		errorf(t, "a retried row is not claimable before its backoff", "claimed %+v", got)
	}
}

func testRelease(t *testing.T, h *harness) {
	ev := event("A")
	h.enqueue(ev)
	c := newClaimer("w")
	recs := h.claim(c, 10)
	lost, err := h.s.Release(h.ctx, c.fence(h), ids(recs))
	if err != nil || len(lost) != 0 {
		t.Fatalf("[release] lost %v err %v", lost, err)
	}
	r := h.get(ev.ID)
	if r.Status != store.StatusPending || r.Attempts != 0 {
		errorf(t, "Release undoes the claim's attempt", "got %+v", r)
	}
	again := h.claim(newClaimer("w2"), 10)
	if len(again) != 1 || again[0].Attempts != 1 {
		errorf(t, "a released row is claimable at once", "claimed %+v", again)
	}
}

func testDiscard(t *testing.T, h *harness) {
	ev, keep := event("Stale"), event("Fresh")
	h.enqueue(ev, keep)
	c := newClaimer("w")
	recs := h.claimWith(c, store.ClaimParams{Scope: store.Scope{IncludeTypes: []string{"Stale"}}})
	lost, err := h.s.Discard(h.ctx, c.fence(h), ids(recs))
	if err != nil || len(lost) != 0 {
		t.Fatalf("[discard] lost %v err %v", lost, err)
	}
	h.notFound("Discard deletes the row", ev.ID)
	if r := h.get(keep.ID); r.Status != store.StatusPending {
		errorf(t, "Discard deletes only the rows named", "other row: %+v", r)
	}
}

func testEmptyBatches(t *testing.T, h *harness) {
	f := store.Fence{Table: h.table, Token: 1}
	if lost, err := h.s.Complete(h.ctx, f, nil); err != nil || len(lost) != 0 {
		errorf(t, "empty batches are no-ops", "Complete: %v %v", lost, err)
	}
	if lost, err := h.s.Retry(h.ctx, f, nil); err != nil || len(lost) != 0 {
		errorf(t, "empty batches are no-ops", "Retry: %v %v", lost, err)
	}
	if lost, err := h.s.Release(h.ctx, f, nil); err != nil || len(lost) != 0 {
		errorf(t, "empty batches are no-ops", "Release: %v %v", lost, err)
	}
}
