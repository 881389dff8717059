package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

var maintenanceTests = []test{
	{"CleanupBounded", testCleanup},
	{"TryLockOncePerInterval", testTryLock},
	{"TryLockConcurrent", testTryLockConcurrent},
	{"Stats", testStats},
	{"LagCountsFromDue", testLagFromDue},
	{"DropThenMigrateAgain", testDrop},
}

// testDrop: Drop removes a table with its migration records, so Migrate
// creates it afresh, empty.
func testDrop(t *testing.T, h *harness) {
	d := h.s
	h.enqueue(event("Dropped"))
	if err := d.Drop(h.ctx, h.table); err != nil {
		errorf(t, "Drop removes a table", "%v", err)
		return
	}
	if _, err := h.s.Stats(h.ctx, h.scope()); err == nil {
		errorf(t, "Drop removes a table", "Stats still reads the dropped table")
	}
	if err := h.s.Migrate(h.ctx, h.table); err != nil {
		errorf(t, "Migrate recreates a dropped table", "%v", err)
		return
	}
	if st := h.stats(); st.Pending != 0 {
		errorf(t, "Migrate recreates a dropped table empty", "stats %+v", st)
	}
	if err := d.Drop(h.ctx, h.table+"_never_created"); err != nil {
		errorf(t, "Drop of a table that does not exist is a no-op", "%v", err)
	}
}

// deliverAll claims and completes every claimable row.
func (h *harness) deliverAll() { h.deliverRecords() }

func testCleanup(t *testing.T, h *harness) {
	const age = time.Second // generous: the fresh row must stay younger through four rounds
	old := make([]herald.Event, 5)
	for i := range old {
		old[i] = event("Old")
	}
	h.enqueue(old...)
	h.deliverAll()
	oldPending, oldDead := event("OldPending"), event("OldDead")
	oldPending.AvailableAt = time.Now().Add(time.Hour)
	h.enqueue(oldDead)
	h.killAll("boom")
	h.enqueue(oldPending)
	// Retention is about time passing on the database clock: let it pass.
	time.Sleep(age + 200*time.Millisecond)
	fresh := event("Fresh")
	h.enqueue(fresh)
	h.deliverAll()

	p := store.CleanupParams{Scope: h.scope(), Delivered: age, Limit: 2}
	var rounds []int64
	for range 4 {
		n, err := h.s.Cleanup(h.ctx, p)
		if err != nil {
			t.Fatalf("[cleanup] %v", err)
		}
		rounds = append(rounds, n)
	}
	if rounds[0] != 2 || rounds[1] != 2 || rounds[2] != 1 || rounds[3] != 0 {
		errorf(t, "Cleanup deletes at most Limit rows per state per round", "rounds deleted %v, want [2 2 1 0]", rounds)
	}
	if r := h.get(fresh.ID); r.Status != store.StatusDelivered {
		errorf(t, "Cleanup deletes only rows older than the age", "fresh row %+v", r)
	}
	if r := h.get(oldDead.ID); r.Status != store.StatusDead {
		errorf(t, "a zero age keeps that state's rows", "dead row %+v", r)
	}
	n, err := h.s.Cleanup(h.ctx, store.CleanupParams{Scope: h.scope(), Dead: age, Active: age, Limit: 10})
	if err != nil || n != 2 {
		errorf(t, "Cleanup deletes old dead and old pending rows", "deleted %d, err %v", n, err)
	}
	h.notFound("Cleanup deletes old dead rows", oldDead.ID)
	h.notFound("Cleanup deletes old pending rows", oldPending.ID)
}

func testTryLock(t *testing.T, h *harness) {
	const interval = time.Second
	other := h.open(t)
	name := randomName("lock")
	lock := func(s store.Store) bool {
		ok, err := s.TryLock(h.ctx, name, interval)
		if err != nil {
			t.Fatalf("[trylock] %v", err)
		}
		return ok
	}
	const rule = "TryLock succeeds once per interval across stores"
	if !lock(h.s) {
		errorf(t, rule, "the first TryLock failed")
	}
	if lock(other) || lock(h.s) {
		errorf(t, rule, "a second TryLock within the interval succeeded")
	}
	if ok, err := other.TryLock(h.ctx, randomName("lock"), interval); err != nil || !ok {
		errorf(t, "locks of different names are independent", "ok %v err %v", ok, err)
	}
	eventually(t, 5*time.Second, "TryLock succeeds again after the interval", func() bool { return lock(other) })
	if lock(h.s) {
		errorf(t, rule, "TryLock right after a renewal succeeded")
	}
}

func testTryLockConcurrent(t *testing.T, h *harness) {
	stores := []store.Store{h.s, h.open(t)}
	name := randomName("lock")
	var (
		mu   sync.Mutex
		wins int
		wg   sync.WaitGroup
	)
	for i := range 8 {
		wg.Go(func() {
			ok, err := stores[i%2].TryLock(h.ctx, name, time.Minute)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errorf(t, "TryLock", "%v", err)
			}
			if ok {
				wins++
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		errorf(t, "concurrent TryLocks: exactly one wins", "%d won", wins)
	}
}

func testStats(t *testing.T, h *harness) {
	// one each: delivered, dead, retrying, in flight, and two pending.
	evs := []herald.Event{event("Deliver"), event("Kill"), event("Retry"), event("Hold")}
	h.enqueue(evs...)
	c := newClaimer("w")
	recs := h.claim(c, 10)
	byType := map[string]int64{}
	for _, r := range recs {
		byType[r.Event.Type] = r.ID
	}
	f := c.fence(h)
	if _, err := h.s.Complete(h.ctx, f, []store.Delivery{{ID: byType["Deliver"]}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Kill(h.ctx, f, []store.Failure{{ID: byType["Kill"], Error: "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Retry(h.ctx, f, []store.Failure{{ID: byType["Retry"], Error: "x", RetryIn: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	h.enqueue(event("New"), event("New"))
	st := h.stats()
	want := store.LaneStats{Pending: 2, Retrying: 1, InFlight: 1, Delivered: 1, Dead: 1}
	got := st
	got.OldestPendingAge = 0
	if got != want {
		errorf(t, "Stats counts rows by state", "got %+v, want %+v", got, want)
	}
	if st.OldestPendingAge < 0 || st.OldestPendingAge > time.Minute {
		errorf(t, "OldestPendingAge is the oldest pending row's age", "got %v", st.OldestPendingAge)
	}
	if empty, err := h.s.Stats(h.ctx, store.Scope{Table: h.table, Tenant: "nobody"}); err != nil ||
		empty != (store.LaneStats{}) {
		errorf(t, "Stats of an empty scope are zero", "got %+v err %v", empty, err)
	}
}

// testLagFromDue: OldestPendingAge is measured from when a row became due,
// so an event delayed by ten minutes is no lag, and one due 30 s ago is
// 30 s of lag whatever its creation time.
func testLagFromDue(t *testing.T, h *harness) {
	delayed := event("Delayed")
	delayed.AvailableAt = time.Now().Add(10 * time.Minute)
	h.enqueue(delayed)
	if st := h.stats(); st.Pending != 1 || st.OldestPendingAge != 0 {
		errorf(t, "a delayed event is not lag before its time", "got %+v", st)
	}
	overdue := event("Overdue")
	overdue.AvailableAt = time.Now().Add(-30 * time.Second)
	h.enqueue(overdue)
	if st := h.stats(); st.OldestPendingAge < 25*time.Second || st.OldestPendingAge > 5*time.Minute {
		errorf(t, "lag counts from available_at", "got %v, want about 30s", st.OldestPendingAge)
	}
}
