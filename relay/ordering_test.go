package relay

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store"
)

// Rule: with ordering key, each key's events reach the broker in commit
// order even when publishes fail at random and several workers and relays
// compete; no key waits for another.
func TestPerKeyOrderUnderInjectedFailures(t *testing.T) {
	e := newEnv(t)
	const keys, perKey = 12, 15
	for k := range keys {
		e.enqueue(events(fmt.Sprintf("k%02d", k), fmt.Sprintf("key-%02d", k), perKey)...)
	}
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	e.pub.SetHook(func(m broker.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if rng.Float64() < 0.25 {
			return errors.New("injected failure")
		}
		return nil
	})
	l := e.lane(func(l *Lane) {
		l.Ordering = OrderingKey
		l.Concurrency = 3
		l.BatchSize = 20
		l.Retry = Retry{Initial: 2 * time.Millisecond, Max: 10 * time.Millisecond, MaxAttempts: 1000}
		// Leases outlive any batch cycle of a busy machine: a lease that
		// runs out republishes its rows (rightly, as duplicates), which
		// the strict check below would call a reorder.
		l.Lease = 20 * time.Second
	})
	e.start(l)
	e.start(l)
	waitFor(t, 120*time.Second, "all delivered", func() bool { return e.stats().Delivered == keys*perKey })
	last := map[string]string{}
	for _, r := range e.pub.Records() {
		ev := r.Message.Event
		if prev, ok := last[ev.PartitionKey]; ok && ev.ID <= prev {
			t.Fatalf("key %s: %s published after %s; per-key commit order broken", ev.PartitionKey, ev.ID, prev)
		}
		last[ev.PartitionKey] = ev.ID
	}
}

// Rule: a key whose head went dead holds its later events with on_dead park,
// lets them go with skip; other keys flow either way.
func TestDeadHeadParksOrSkipsItsKey(t *testing.T) {
	for _, policy := range []OnDead{OnDeadPark, OnDeadSkip} {
		t.Run(string(policy), func(t *testing.T) {
			e := newEnv(t)
			w := e.watch()
			e.enqueue(events("a", "A", 3)...)
			e.enqueue(events("b", "B", 3)...)
			e.pub.FailEvent("a-000", 1, herald.Permanent(errors.New("poison")))
			e.start(e.lane(func(l *Lane) { l.Ordering = OrderingKey; l.OnDead = policy }))
			waitFor(t, 5*time.Second, "key B delivered", func() bool { return e.pub.Count("b-002") == 1 })
			waitFor(t, 5*time.Second, "a-000 dead", func() bool { return e.get("a-000").Status == store.StatusDead })
			if policy == OnDeadSkip {
				waitFor(t, 5*time.Second, "key A's later events", func() bool { return e.pub.Count("a-002") == 1 })
				return
			}
			// Claims after the head died, each of which could have taken
			// a-001 (a claim at every poll interval at least).
			after := w.claimCount()
			waitFor(t, 10*time.Second, "five claims after the head died", func() bool { return w.claimCount() >= after+5 })
			// A parked row may be inside a claim that is about to release
			// it when looked at: it must only never go out nor finish.
			if n, st := e.pub.Count("a-001"), e.get("a-001").Status; n != 0 ||
				(st != store.StatusPending && st != store.StatusInFlight) {
				t.Fatalf("park: a-001 went out behind a dead head (published %d times, status %s)", n, st)
			}
		})
	}
}
