package relay

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/store"
)

func TestDeliversEveryEventWithReceipt(t *testing.T) {
	e := newEnv(t)
	e.enqueue(events("a", "", 250)...)
	e.start(e.lane())
	waitFor(t, 60*time.Second, "250 delivered", func() bool { return e.stats().Delivered == 250 })
	if n := e.pub.Distinct(); n != 250 {
		t.Fatalf("broker has %d distinct events, want 250", n)
	}
	rec := e.get("a-007")
	if rec.Status != store.StatusDelivered || rec.Receipt.Stream != "memory" || rec.Receipt.Sequence == 0 {
		t.Fatalf("delivered row must keep the broker's receipt, got %+v", rec)
	}
	if dest := e.pub.Records()[0].Message.Destination; dest != "t.Happened" {
		t.Fatalf("destination = %q, want the rendered template t.Happened", dest)
	}
}

// Rule: concurrent workers (and relays) never publish the same row twice
// while a lease is live.
func TestConcurrentWorkersClaimExclusively(t *testing.T) {
	e := newEnv(t)
	for i := range 10 {
		e.enqueue(events(string(rune('a'+i)), "", 100)...)
	}
	// A lease far longer than a batch cycle, even under the race detector
	// on a busy machine: a lease that runs out lets another worker publish
	// the row again, rightly, and this rule is about live leases.
	l := e.lane(func(l *Lane) { l.Concurrency, l.BatchSize, l.Lease = 4, 25, 20*time.Second })
	e.start(l)
	e.start(l) // a second relay on the same table
	waitFor(t, 60*time.Second, "1000 delivered", func() bool { return e.stats().Delivered == 1000 })
	for _, r := range e.pub.Records() {
		if n := e.pub.Count(r.Message.Event.ID); n != 1 {
			t.Fatalf("event %s published %d times; claims must be exclusive", r.Message.Event.ID, n)
		}
	}
}

// Rule: an idle relay reacts to an enqueue in this process at once, not at
// its next look. On a store it cannot peek at, an idle worker looks
// (claims) at doubling intervals up to poll_interval (an hour here); once
// two of its looks came a second apart, the next comes no sooner than that
// after the last, so an event enqueued right then and delivered before it
// was delivered by the wakeup (a second leaves room for a loaded machine
// under -race). On a store it can peek at, it also peeks every idlePeek.
func TestInProcessWakeupBeatsPollInterval(t *testing.T) {
	e := newEnv(t)
	w := e.watchClaimsOnly()
	e.start(e.lane(func(l *Lane) { l.PollInterval = time.Hour }))
	const idleGap = time.Second
	waitFor(t, 30*time.Second, "the worker idle, looking a second apart", func() bool {
		_, gap := w.lastGap()
		return gap >= idleGap
	})
	last, gap := w.lastGap()
	nextLook := last.Add(gap)
	e.enqueue(events("w", "", 1)...)
	if err := waitCtx(t, 30*time.Second, func(ctx context.Context) error { return e.pub.WaitDistinct(ctx, 1) }); err != nil {
		t.Fatalf("an enqueue must wake an idle relay: %v", err)
	}
	if at := time.Now(); at.After(nextLook) {
		t.Fatalf("delivered %s after the worker's last look, which came %s after the one before: "+
			"its next look, not the wakeup, found the event", at.Sub(last).Round(time.Millisecond), gap.Round(time.Millisecond))
	}
}

// Rule: a row claimed by a worker that died is taken over when its lease
// runs out, and the dead worker's late mark changes nothing (fencing).
func TestExpiredLeaseIsTakenOverAndFenced(t *testing.T) {
	e := newEnv(t)
	e.enqueue(events("l", "", 1)...)
	ctx := context.Background()
	scope := store.Scope{Table: e.table}
	crashed, err := e.store.Claim(ctx, store.ClaimParams{Scope: scope, Owner: "dead/worker", Token: 42,
		Lease: 100 * time.Millisecond, Limit: 10})
	if err != nil || len(crashed) != 1 {
		t.Fatalf("claim: %v %v", crashed, err)
	}
	e.start(e.lane())
	waitFor(t, 5*time.Second, "the expired lease taken over", func() bool { return e.stats().Delivered == 1 })
	lost, err := e.store.Retry(ctx, store.Fence{Table: e.table, Token: 42},
		[]store.Failure{{ID: crashed[0].ID, Error: "late", RetryIn: time.Second}})
	if err != nil || len(lost) != 1 {
		t.Fatalf("the stale worker's mark must be reported lost, got lost=%v err=%v", lost, err)
	}
	if rec := e.get("l-000"); rec.Status != store.StatusDelivered {
		t.Fatalf("a stale worker overwrote the row: %+v", rec)
	}
}

// Rule: on shutdown in-flight publishes finish and every claimed row that
// was not published is released at once (pending, attempt undone).
func TestShutdownReleasesUnpublishedRows(t *testing.T) {
	e := newEnv(t)
	e.enqueue(events("s", "k", 50)...)
	e.pub.SetDelay(20 * time.Millisecond)
	r := e.start(e.lane(func(l *Lane) { l.Ordering = OrderingKey; l.BatchSize = 50 }))
	if err := waitCtx(t, 5*time.Second, func(ctx context.Context) error { return e.pub.WaitDistinct(ctx, 3) }); err != nil {
		t.Fatal(err)
	}
	r.stop()
	st := e.stats()
	if st.InFlight != 0 {
		t.Fatalf("%d rows still in flight after shutdown; they must be released", st.InFlight)
	}
	if st.Delivered != int64(e.pub.Distinct()) {
		t.Fatalf("delivered rows %d != published %d: an in-flight publish was not marked", st.Delivered, e.pub.Distinct())
	}
	if st.Pending == 0 || st.Retrying != 0 {
		t.Fatalf("released rows must be pending with their attempt undone, got %+v", st)
	}
}

func TestTypeFiltersSplitLanes(t *testing.T) {
	e := newEnv(t)
	gifts := memory.New(memory.Config{})
	e.enqueue(herald.Event{Topic: "t", Type: "Gift", Payload: []byte("{}")},
		herald.Event{Topic: "t", Type: "Chat", Payload: []byte("{}")},
		herald.Event{Topic: "t", Type: "Gift", Payload: []byte("{}")})
	e.start(
		e.lane(func(l *Lane) { l.Name = "gifts"; l.Publisher = gifts; l.IncludeTypes = []string{"Gift"} }),
		e.lane(func(l *Lane) { l.Name = "rest"; l.ExcludeTypes = []string{"Gift"} }),
	)
	waitFor(t, 5*time.Second, "3 delivered", func() bool { return e.stats().Delivered == 3 })
	if gifts.Distinct() != 2 || e.pub.Distinct() != 1 || e.pub.Records()[0].Message.Event.Type != "Chat" {
		t.Fatalf("include/exclude filters: gifts lane got %d, rest lane got %d", gifts.Distinct(), e.pub.Distinct())
	}
}
