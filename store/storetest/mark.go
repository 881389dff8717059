package storetest

import (
	"fmt"
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
	{"AttemptErrors", testAttemptErrors},
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

// testAttemptErrors fails one row more times than a row keeps, then
// delivers another after one failure: Get returns the last
// store.MaxAttemptErrors failures, oldest first, with their attempt
// numbers and database times, and a delivery adds nothing.
func testAttemptErrors(t *testing.T, h *harness) {
	failing, delivered := event("Failing"), event("Delivered")
	h.enqueue(failing, delivered)
	before := time.Now().Add(-time.Minute) // database and host clocks may differ a little
	const fails = store.MaxAttemptErrors + 2
	c := newClaimer("w")
	for i := 1; i <= fails; i++ {
		recs := h.claimWith(c, store.ClaimParams{Scope: store.Scope{IncludeTypes: []string{"Failing"}}})
		if len(recs) != 1 {
			t.Fatalf("[claim] attempt %d claimed %d rows", i, len(recs))
		}
		mark := h.s.Retry
		if i == fails {
			mark = h.s.Kill
		}
		if lost, err := mark(h.ctx, c.fence(h), []store.Failure{{ID: recs[0].ID, Error: fmt.Sprintf("failure %d", i)}}); err != nil || len(lost) != 0 {
			t.Fatalf("[retry] attempt %d: lost %v err %v", i, lost, err)
		}
	}
	r := h.get(failing.ID)
	if len(r.Errors) != store.MaxAttemptErrors {
		t.Fatalf("[a row keeps its last %d attempt errors] got %d: %+v", store.MaxAttemptErrors, len(r.Errors), r.Errors)
	}
	for i, e := range r.Errors {
		n := fails - store.MaxAttemptErrors + 1 + i
		if e.Attempt != n || e.Error != fmt.Sprintf("failure %d", n) || e.At.Before(before) || e.At.After(time.Now().Add(time.Minute)) {
			errorf(t, "attempt errors are the last failures, oldest first, with attempt and time", "#%d: %+v", i, e)
		}
	}
	if r.LastError != fmt.Sprintf("failure %d", fails) {
		errorf(t, "last_error is the last attempt's error", "got %q", r.LastError)
	}
	recs := h.claimWith(c, store.ClaimParams{Scope: store.Scope{IncludeTypes: []string{"Delivered"}}})
	if _, err := h.s.Retry(h.ctx, c.fence(h), []store.Failure{{ID: recs[0].ID, Error: "once"}}); err != nil {
		t.Fatalf("[retry] %v", err)
	}
	h.complete(c, h.claimWith(c, store.ClaimParams{Scope: store.Scope{IncludeTypes: []string{"Delivered"}}})...)
	if r := h.get(delivered.ID); r.Status != store.StatusDelivered || len(r.Errors) != 1 || r.Errors[0].Error != "once" || r.Errors[0].Attempt != 1 {
		errorf(t, "a delivery keeps the failures before it and adds none", "got %s %+v", r.Status, r.Errors)
	}
	testAttemptErrorsWrittenByHand(t, h)
}

// testAttemptErrorsWrittenByHand: an attempt_errors value that is not a
// JSON array (a plain UPDATE; text that is not JSON where the column takes
// it) neither fails the failure mark nor the read: the history starts
// afresh.
func testAttemptErrorsWrittenByHand(t *testing.T, h *harness) {
	for _, junk := range []string{`{"a": 1}`, `not json`} {
		ev := event("Junk")
		h.enqueue(ev)
		q := h.s.Dialect().Rebind("UPDATE " + h.s.Dialect().Quote(h.table) + " SET attempt_errors = ? WHERE event_id = ?")
		if _, err := h.s.DB().ExecContext(h.ctx, q, junk, ev.ID); err != nil {
			continue // the column refuses it (PostgreSQL's jsonb and text that is not JSON)
		}
		if r := h.get(ev.ID); len(r.Errors) != 0 {
			errorf(t, "attempt_errors that are not an array read as none", "%q read as %+v", junk, r.Errors)
		}
		c := newClaimer("j")
		recs := h.claimWith(c, store.ClaimParams{Scope: store.Scope{IncludeTypes: []string{"Junk"}}})
		if lost, err := h.s.Kill(h.ctx, c.fence(h), []store.Failure{{ID: recs[0].ID, Error: "after junk"}}); err != nil || len(lost) != 0 {
			errorf(t, "attempt_errors written by hand do not fail the mark", "%q: lost %v, %v", junk, lost, err)
			continue
		}
		if r := h.get(ev.ID); len(r.Errors) != 1 || r.Errors[0].Error != "after junk" {
			errorf(t, "attempt_errors written by hand start afresh", "%q: %+v", junk, r.Errors)
		}
	}
}
