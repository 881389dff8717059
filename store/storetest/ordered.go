package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

var orderedTests = []test{
	{"HeldKeyIsSkipped", testOrderedHeldKey},
	{"RetriedHeadBlocksItsKey", testOrderedRetriedHead},
	{"ParkOnDead", testOrderedParkOnDead},
	{"ConcurrentWorkersKeepKeyOrder", func(t *testing.T, h *harness) { testOrderedConcurrent(t, h, false) }},
	{"ConcurrentWorkersKeepKeyOrderAsyncCommit", func(t *testing.T, h *harness) { testOrderedConcurrent(t, h, true) }},
}

func ordered(limit int) store.ClaimParams {
	return store.ClaimParams{Ordered: true, Limit: limit, Lease: time.Minute}
}

// keysOf returns the partition keys in recs, "" for unkeyed rows.
func keysOf(recs []store.Record) map[string][]int64 {
	out := map[string][]int64{}
	for _, r := range recs {
		out[r.Event.PartitionKey] = append(out[r.Event.PartitionKey], r.ID)
	}
	return out
}

func testOrderedHeldKey(t *testing.T, h *harness) {
	h.enqueue(keyed("A", 3)...)
	h.enqueue(keyed("B", 2)...)
	h.enqueue(event("Unkeyed"))
	first := h.claimWith(newClaimer("w1"), ordered(1))
	if len(first) != 1 || first[0].Event.PartitionKey != "A" {
		t.Fatalf("[ordered claims go by id] first claim %+v", first)
	}
	second := h.claimWith(newClaimer("w2"), ordered(10))
	keys := keysOf(second)
	if len(keys["A"]) != 0 {
		errorf(t, "a key held under a live lease is not claimed by another worker", "claimed A rows %v", keys["A"])
	}
	if len(keys["B"]) != 2 || len(keys[""]) != 1 {
		errorf(t, "other keys and unkeyed rows flow while a key is held", "claimed %v", keys)
	}
	if !slices.IsSorted(keys["B"]) {
		errorf(t, "a key's ready rows are claimed together in id order", "B rows %v", keys["B"])
	}
}

func testOrderedRetriedHead(t *testing.T, h *harness) {
	h.enqueue(keyed("A", 3)...)
	h.enqueue(keyed("B", 1)...)
	c := newClaimer("w")
	recs := h.claimWith(c, ordered(10))
	if len(recs) != 4 {
		t.Fatalf("[ordered claim] claimed %d rows, want 4", len(recs))
	}
	a := keysOf(recs)["A"]
	// The relay retries the head and releases the rest of its key.
	if lost, err := h.s.Retry(h.ctx, c.fence(h), []store.Failure{{ID: a[0], Error: "x", RetryIn: time.Hour}}); err != nil || len(lost) != 0 {
		t.Fatalf("[retry] lost %v err %v", lost, err)
	}
	if lost, err := h.s.Release(h.ctx, c.fence(h), a[1:]); err != nil || len(lost) != 0 {
		t.Fatalf("[release] lost %v err %v", lost, err)
	}
	h.complete(c, recs[len(recs)-1])
	h.enqueue(keyed("B", 1)...)
	got := keysOf(h.claimWith(newClaimer("w2"), ordered(10)))
	if len(got["A"]) != 0 {
		errorf(t, "a retried head blocks the rest of its key", "claimed A rows %v", got["A"])
	}
	if len(got["B"]) != 1 {
		errorf(t, "a retried head does not hold up other keys", "claimed %v", got)
	}
	unordered := h.claim(newClaimer("w3"), 10)
	if len(unordered) != 2 {
		errorf(t, "unordered claims ignore keys", "claimed %d rows, want the 2 released A rows", len(unordered))
	}
}

func testOrderedParkOnDead(t *testing.T, h *harness) {
	h.enqueue(keyed("A", 2)...)
	c := newClaimer("w")
	recs := h.claimWith(c, ordered(1))
	if _, err := h.s.Kill(h.ctx, c.fence(h), []store.Failure{{ID: recs[0].ID, Error: "poison"}}); err != nil {
		t.Fatal(err)
	}
	park := ordered(10)
	park.ParkOnDead = true
	if got := h.claimWith(newClaimer("w"), park); len(got) != 0 {
		errorf(t, "with ParkOnDead a dead head holds its key", "claimed %v", ids(got))
	}
	if got := h.claimWith(newClaimer("w"), ordered(10)); len(got) != 1 || got[0].ID <= recs[0].ID {
		errorf(t, "without ParkOnDead a dead head releases its key", "claimed %v", ids(got))
	}
}

// orderChecker follows the rows of each key through concurrent workers:
// a worker must claim exactly the next rows of a key nobody else holds.
type orderChecker struct {
	mu     sync.Mutex
	next   map[string][]int64 // each key's rows not yet delivered, in id order
	holder map[string]string
	errs   []string
}

func (o *orderChecker) fail(msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.errs = append(o.errs, msg)
}

func (o *orderChecker) claimed(owner string, recs []store.Record) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for key, got := range keysOf(recs) {
		if prev, ok := o.holder[key]; ok {
			o.errs = append(o.errs, fmt.Sprintf("key %s claimed by %s while %s holds it", key, owner, prev))
		}
		o.holder[key] = owner
		if want := o.next[key][:min(len(got), len(o.next[key]))]; !slices.Equal(got, want) {
			o.errs = append(o.errs, fmt.Sprintf("key %s: %s claimed %v, next rows are %v", key, owner, got, want))
		}
	}
}

// done is called before the worker completes, so that a claim of the key's
// next rows (possible only after the Complete) finds the key free.
func (o *orderChecker) done(recs []store.Record) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for key, got := range keysOf(recs) {
		delete(o.holder, key)
		o.next[key] = o.next[key][min(len(got), len(o.next[key])):]
	}
}

// testOrderedConcurrent has workers on two stores drain keyed rows with
// ordered claims, checking each key is claimed in order by one worker at a
// time. With async, claims return before they commit (AsyncCommit).
func testOrderedConcurrent(t *testing.T, h *harness, async bool) {
	const keys, perKey, workers = 8, 25, 4
	var evs []herald.Event
	for i := range perKey {
		for k := range keys {
			ev := event("Keyed")
			ev.PartitionKey = fmt.Sprintf("k%d", k)
			ev.Payload = fmt.Appendf(nil, `{"seq":%d}`, i)
			evs = append(evs, ev)
		}
	}
	h.enqueue(evs...)
	all := h.listAll()
	oc := &orderChecker{next: map[string][]int64{}, holder: map[string]string{}}
	for _, r := range all {
		oc.next[r.Event.PartitionKey] = append(oc.next[r.Event.PartitionKey], r.ID)
	}
	stores := []store.Store{h.s, h.open(t)}
	// A claim can come back empty while other workers hold every key (or
	// SKIP LOCKED passed over rows another claim was locking), so a worker
	// stops only when everything is delivered or the deadline passes.
	deadline := time.Now().Add(time.Minute)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			s, c := stores[w%2], newClaimer(fmt.Sprintf("w%d", w))
			for time.Now().Before(deadline) {
				p := ordered(5)
				p.Scope, p.Owner, p.Token, p.AsyncCommit = h.scope(), c.owner, c.token, async
				recs, err := s.Claim(h.ctx, p)
				if err != nil {
					oc.fail("claim: " + err.Error())
					return
				}
				if len(recs) == 0 {
					if st, err := s.Stats(h.ctx, h.scope()); err == nil && st.Delivered == keys*perKey {
						return
					}
					time.Sleep(time.Millisecond)
					continue
				}
				oc.claimed(c.owner, recs)
				oc.done(recs)
				ds := make([]store.Delivery, len(recs))
				for i, r := range recs {
					ds[i] = store.Delivery{ID: r.ID}
				}
				if lost, err := s.Complete(h.ctx, c.fence(h), ds); err != nil || len(lost) > 0 {
					oc.fail(fmt.Sprintf("%s complete: lost %v err %v", c.owner, lost, err))
					return
				}
			}
		})
	}
	wg.Wait()
	for _, e := range oc.errs {
		errorf(t, "ordered claims keep each key in order, held by one worker", "%s", e)
	}
	if st := h.stats(); st.Delivered != keys*perKey {
		errorf(t, "ordered claims drain every key", "stats %+v", st)
	}
}

// listAll returns every pending row in id order.
func (h *harness) listAll() []store.Record {
	h.t.Helper()
	var all []store.Record
	for {
		var after int64
		if len(all) > 0 {
			after = all[len(all)-1].ID
		}
		page, err := h.s.List(h.ctx, store.ListParams{Scope: h.scope(), Status: store.StatusPending, AfterID: after, Limit: 100})
		if err != nil {
			h.t.Fatalf("[list] %v", err)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
	}
}
