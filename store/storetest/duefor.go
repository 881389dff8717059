package storetest

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

// dueForTests check store.Record.DueFor, which the relay's commit → ack
// histogram starts from: how long a claimed row had been due, on the
// database clock, read before the claim rewrote available_at.
var dueForTests = []test{
	{"PastDue", func(t *testing.T, h *harness) { testDueForPast(t, h, false) }},
	{"PastDueOrdered", func(t *testing.T, h *harness) { testDueForPast(t, h, true) }},
	{"Delayed", testDueForDelayed},
	{"ExpiredLease", testDueForExpiredLease},
}

// testDueForPast: an event enqueued as due 3 s ago is claimed as due for
// about 3 s; one due now for about nothing.
func testDueForPast(t *testing.T, h *harness, ordered bool) {
	past, now := event("Past"), event("Now")
	past.AvailableAt = time.Now().Add(-3 * time.Second)
	past.PartitionKey, now.PartitionKey = "k1", "k2"
	h.enqueue(past, now)
	recs := h.claimWith(newClaimer("w"), store.ClaimParams{Ordered: ordered})
	if len(recs) != 2 {
		t.Fatalf("[claim] claimed %d rows, want 2", len(recs))
	}
	const rule = "a claimed record says how long it had been due (available_at before the claim, database clock)"
	for _, r := range recs {
		lo, hi := 2500*time.Millisecond, time.Minute
		if r.Event.ID == now.ID {
			lo, hi = 0, 2*time.Second
		}
		if r.DueFor < lo || r.DueFor > hi {
			errorf(t, rule, "%s event: DueFor %v, want within [%v, %v]", r.Event.Type, r.DueFor, lo, hi)
		}
	}
}

// testDueForDelayed: a delayed event claimed as soon as it is due was due
// for next to nothing, however long ago it was created.
func testDueForDelayed(t *testing.T, h *harness) {
	const delay = 1500 * time.Millisecond
	ev := event("Delayed")
	ev.AvailableAt = time.Now().Add(delay)
	h.enqueue(ev)
	var got []store.Record
	eventually(t, 10*time.Second, "a delayed row becomes claimable at available_at", func() bool {
		got = h.claim(newClaimer("w"), 10)
		return len(got) > 0
	})
	r := got[0]
	if r.DueFor < 0 || r.DueFor > 700*time.Millisecond || r.Age < delay-500*time.Millisecond {
		errorf(t, "a delayed event is due from its available_at, not from its creation",
			"claimed at age %v with DueFor %v, want DueFor under 700ms", r.Age, r.DueFor)
	}
}

// testDueForExpiredLease: a row taken over after its lease ran out was due
// from the lease's end.
func testDueForExpiredLease(t *testing.T, h *harness) {
	h.enqueue(event("A"))
	const lease, wait = 300 * time.Millisecond, 1200 * time.Millisecond
	if recs := h.claimWith(newClaimer("first"), store.ClaimParams{Lease: lease}); len(recs) != 1 {
		t.Fatalf("[claim] claimed %d rows, want 1", len(recs))
	}
	time.Sleep(wait)
	var got []store.Record
	eventually(t, 5*time.Second, "an expired lease can be claimed again", func() bool {
		got = h.claimWith(newClaimer("second"), store.ClaimParams{Lease: time.Minute})
		return len(got) > 0
	})
	r := got[0]
	if r.DueFor < wait-lease-400*time.Millisecond || r.DueFor > r.Age-lease+400*time.Millisecond {
		errorf(t, "a row whose lease ran out is due from the lease's end",
			"DueFor %v at age %v, want about %v", r.DueFor, r.Age, wait-lease)
	}
}
