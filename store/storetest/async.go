package storetest

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

// testAsyncCommitThenMark claims with AsyncCommit and marks at once, as the
// relay does after a fast publish: the marks must find the rows theirs
// (waiting for the claim's commit where the store commits late), and no
// other claim may take the rows meanwhile.
func testAsyncCommitThenMark(t *testing.T, h *harness) {
	for range 20 {
		h.enqueue(event("A"), event("B"))
		c := newClaimer("w")
		// A partial batch: a store may commit full ones at once.
		recs := h.claimWith(c, store.ClaimParams{Limit: 10, AsyncCommit: true})
		if len(recs) != 2 {
			t.Fatalf("[an async-commit claim returns its rows] claimed %d rows, want 2", len(recs))
		}
		if again := h.claim(newClaimer("other"), 10); len(again) != 0 {
			errorf(t, "rows of an async-commit claim are not claimable by others", "claimed %v", ids(again))
		}
		if lost := h.complete(c, recs[0]); len(lost) != 0 {
			errorf(t, "a mark right after an async-commit claim finds its rows", "complete lost %v", lost)
		}
		if lost, err := h.s.Retry(h.ctx, c.fence(h), []store.Failure{{ID: recs[1].ID, Error: "x", RetryIn: time.Hour}}); err != nil || len(lost) != 0 {
			errorf(t, "a mark right after an async-commit claim finds its rows", "retry lost %v err %v", lost, err)
		}
	}
	if st := h.stats(); st.Delivered != 20 || st.Retrying != 20 {
		errorf(t, "marks after async-commit claims stick", "stats %+v, want 20 delivered, 20 retrying", st)
	}
}

// testPeek checks store.Peeker: Ready finds a due pending row of the
// scope and nothing else.
func testPeek(t *testing.T, h *harness, pk store.Peeker) {
	ready := func(sc store.Scope) bool {
		t.Helper()
		ok, err := pk.Ready(h.ctx, sc)
		if err != nil {
			t.Fatalf("[peek] Ready: %v", err)
		}
		return ok
	}
	const rule = "Ready reports a due pending row of the scope"
	if ready(h.scope()) {
		errorf(t, rule, "ready on an empty table")
	}
	later := event("A")
	later.Tenant = "acme"
	later.AvailableAt = time.Now().Add(time.Hour)
	h.enqueue(later)
	if ready(h.scope()) {
		errorf(t, rule, "ready with only a delayed row")
	}
	due := event("A")
	due.Tenant = "acme"
	h.enqueue(due)
	if !ready(h.scope()) || !ready(store.Scope{Table: h.table, Tenant: "acme"}) {
		errorf(t, rule, "not ready with a due row")
	}
	if ready(store.Scope{Table: h.table, Tenant: "globex"}) {
		errorf(t, rule, "ready for another tenant's row")
	}
	if ready(store.Scope{Table: h.table, ExcludeTypes: []string{"A"}}) ||
		ready(store.Scope{Table: h.table, IncludeTypes: []string{"B"}}) {
		errorf(t, rule, "ready for a row the type filters leave out")
	}
	h.claim(newClaimer("w"), 10)
	if ready(h.scope()) {
		errorf(t, rule, "ready with the due row under a live lease")
	}
}
