package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

var claimTests = []test{
	{"Fields", testClaimFields},
	{"Limit", testClaimLimit},
	{"ExclusiveUnderConcurrency", func(t *testing.T, h *harness) { testClaimConcurrent(t, h, false) }},
	{"ExclusiveUnderConcurrencyAsyncCommit", func(t *testing.T, h *harness) { testClaimConcurrent(t, h, true) }},
	{"AsyncCommitThenMark", testAsyncCommitThenMark},
}

func testClaimFields(t *testing.T, h *harness) {
	h.enqueue(event("A"), event("B"), event("C"))
	c := newClaimer("node/lane-01")
	before := time.Now()
	recs := h.claimWith(c, store.ClaimParams{Lease: time.Hour})
	const rule = "a claim leases rows in claim order with attempts+1"
	if len(recs) != 3 {
		t.Fatalf("[%s] claimed %d rows, want 3", rule, len(recs))
	}
	for i, r := range recs {
		if i > 0 && r.ID <= recs[i-1].ID {
			errorf(t, rule, "ids out of order: %v", ids(recs))
		}
		if r.Status != store.StatusInFlight || r.Attempts != 1 || r.LeaseOwner != c.owner {
			errorf(t, rule, "row %d: status %q attempts %d owner %q", r.ID, r.Status, r.Attempts, r.LeaseOwner)
		}
		// Clocks of client and database may differ a little; an hour's
		// lease must still end far in the future.
		if r.AvailableAt.Before(before.Add(50 * time.Minute)) {
			errorf(t, "available_at holds the lease end while in flight", "row %d: %v", r.ID, r.AvailableAt)
		}
		if r.Age < 0 || r.Age > time.Minute {
			errorf(t, "age comes from the database clock", "row %d: age %v", r.ID, r.Age)
		}
	}
	if again := h.claim(newClaimer("other"), 10); len(again) != 0 {
		errorf(t, "a row under a live lease is not claimable", "claimed %v", ids(again))
	}
}

func testClaimLimit(t *testing.T, h *harness) {
	evs := make([]herald.Event, 10)
	for i := range evs {
		evs[i] = event("A")
	}
	h.enqueue(evs...)
	first := h.claim(newClaimer("w"), 4)
	second := h.claim(newClaimer("w"), 100)
	if len(first) != 4 || len(second) != 6 {
		errorf(t, "a claim takes at most Limit rows", "got %d then %d rows, want 4 then 6", len(first), len(second))
	}
	if first[3].ID >= second[0].ID {
		errorf(t, "rows are claimed oldest first", "first %v second %v", ids(first), ids(second))
	}
}

// testClaimConcurrent has workers on two store instances claim and complete
// until every row is delivered: no row may be handed to two workers, and
// every row must be claimed exactly once. With async, claims return before
// they commit (ClaimParams.AsyncCommit), each batch is completed at once,
// and rows arrive in a trickle of fives, so that claims mostly find fewer
// rows than their limit (a store may commit full batches at once).
func testClaimConcurrent(t *testing.T, h *harness, async bool) {
	const rows, workers = 300, 6
	evs := make([]herald.Event, rows)
	for i := range evs {
		evs[i] = event("A")
	}
	chunk := rows
	if async {
		chunk = 5
	}
	stores := []store.Store{h.s, h.open(t)}
	var (
		mu   sync.Mutex
		seen = map[int64]string{}
		errs []string
		wg   sync.WaitGroup
	)
	fail := func(msg string) {
		mu.Lock()
		errs = append(errs, msg)
		mu.Unlock()
	}
	finished := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == rows || len(errs) > 0
	}
	wg.Go(func() {
		for i := 0; i < rows; i += chunk {
			if err := h.tryEnqueue(h.ob, evs[i:i+chunk]...); err != nil {
				fail("enqueue: " + err.Error())
				return
			}
		}
	})
	deadline := time.Now().Add(time.Minute)
	for w := range workers {
		wg.Go(func() {
			s := stores[w%len(stores)]
			c := newClaimer(fmt.Sprintf("w%d", w))
			for !finished() && time.Now().Before(deadline) {
				recs, err := s.Claim(h.ctx, store.ClaimParams{Scope: h.scope(), Owner: c.owner, Token: c.token,
					Lease: time.Minute, Limit: 7, AsyncCommit: async})
				if err != nil {
					fail(err.Error())
					return
				}
				if len(recs) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				mu.Lock()
				for _, r := range recs {
					if prev, ok := seen[r.ID]; ok {
						errs = append(errs, fmt.Sprintf("row %d claimed by %s and %s", r.ID, prev, c.owner))
					}
					seen[r.ID] = c.owner
				}
				mu.Unlock()
				ds := make([]store.Delivery, len(recs))
				for i, r := range recs {
					ds[i] = store.Delivery{ID: r.ID}
				}
				if lost, err := s.Complete(h.ctx, c.fence(h), ds); err != nil || len(lost) > 0 {
					fail(fmt.Sprintf("complete: lost %v err %v", lost, err))
				}
			}
		})
	}
	wg.Wait()
	for _, e := range errs {
		errorf(t, "concurrent claims are exclusive", "%s", e)
	}
	if len(seen) != rows {
		errorf(t, "every row is claimed exactly once", "claimed %d distinct rows, want %d", len(seen), rows)
	}
	if st := h.stats(); st.Delivered != rows {
		errorf(t, "every row is claimed exactly once", "stats %+v", st)
	}
}
