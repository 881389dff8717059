package storetest

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

var leaseTests = []test{
	{"ExpiryAndFencing", testLeaseExpiry},
}

// testLeaseExpiry lets a short lease run out: another owner claims the row,
// and every mark by the first owner is then reported lost and changes nothing.
func testLeaseExpiry(t *testing.T, h *harness) {
	ev := event("A")
	h.enqueue(ev)
	first, second := newClaimer("first"), newClaimer("second")
	got := h.claimWith(first, store.ClaimParams{Lease: 150 * time.Millisecond})
	if len(got) != 1 {
		t.Fatalf("[claim] first owner claimed %d rows", len(got))
	}
	id := got[0].ID
	var again []store.Record
	eventually(t, 5*time.Second, "a row whose lease ran out is claimable again", func() bool {
		again = h.claimWith(second, store.ClaimParams{Lease: time.Minute})
		return len(again) > 0
	})
	if again[0].ID != id || again[0].Attempts != 2 || again[0].LeaseOwner != second.owner {
		errorf(t, "a reclaimed row counts the attempt and names its new owner", "got %+v", again[0])
	}

	const rule = "a lost lease's marks are reported lost and change nothing"
	f := first.fence(h)
	fail := []store.Failure{{ID: id, Error: "late", RetryIn: time.Millisecond}}
	checks := map[string]func() ([]int64, error){
		"Complete": func() ([]int64, error) { return h.s.Complete(h.ctx, f, []store.Delivery{{ID: id}}) },
		"Retry":    func() ([]int64, error) { return h.s.Retry(h.ctx, f, fail) },
		"Kill":     func() ([]int64, error) { return h.s.Kill(h.ctx, f, fail) },
		"Release":  func() ([]int64, error) { return h.s.Release(h.ctx, f, []int64{id}) },
		"Discard":  func() ([]int64, error) { return h.s.Discard(h.ctx, f, []int64{id}) },
	}
	for name, mark := range checks {
		lost, err := mark()
		if err != nil || !sameIDs(lost, []int64{id}) {
			errorf(t, rule, "%s by the first owner: lost %v err %v, want [%d]", name, lost, err, id)
		}
	}
	r := h.get(ev.ID)
	if r.Status != store.StatusInFlight || r.LeaseOwner != second.owner || r.Attempts != 2 || r.LastError != "" {
		errorf(t, rule, "row after the first owner's marks: %+v", r)
	}
	if lost := h.complete(second, again[0]); len(lost) != 0 {
		errorf(t, "the current owner's mark succeeds", "lost %v", lost)
	}
	if r := h.get(ev.ID); r.Status != store.StatusDelivered {
		errorf(t, "the current owner's mark succeeds", "status %q", r.Status)
	}
}
