package relay

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/storetest"
)

// countingStore counts the claims and peeks a relay makes of its store.
type countingStore struct {
	store.Store
	claims, peeks atomic.Int64
}

func (c *countingStore) Claim(ctx context.Context, p store.ClaimParams) ([]store.Record, error) {
	c.claims.Add(1)
	return c.Store.Claim(ctx, p)
}

func (c *countingStore) Ready(ctx context.Context, s store.Scope) (bool, error) {
	c.peeks.Add(1)
	return c.Store.(store.Peeker).Ready(ctx, s)
}

// plainInsert enqueues one event with the documented plain SQL, as another
// process in any language would: no in-process wakeup.
func (e *env) plainInsert(id string) {
	e.t.Helper()
	_, err := e.store.DB().Exec(storetest.PlainInsert(herald.SQLite, e.table), id, "t", "Happened", []byte(`{}`))
	if err != nil {
		e.t.Fatal(err)
	}
}

// Rule: on a store that can be peeked at and sends no wakeups, the short
// polls after activity are peeks, and a peek that finds rows leads to a
// claim: an event inserted by another process is relayed long before the
// poll interval.
func TestPeekFindsAnotherProcessesEvent(t *testing.T) {
	e := newEnv(t)
	counting := &countingStore{Store: e.store}
	e.store = counting
	e.start(e.lane(func(l *Lane) { l.PollInterval = time.Hour }))
	e.enqueue(events("w", "", 1)...)
	if err := waitCtx(t, 5*time.Second, func(ctx context.Context) error { return e.pub.WaitDistinct(ctx, 1) }); err != nil {
		t.Fatal(err)
	}
	e.plainInsert("plain-1")
	if err := waitCtx(t, 5*time.Second, func(ctx context.Context) error { return e.pub.WaitDistinct(ctx, 2) }); err != nil {
		t.Fatalf("an event inserted without a wakeup must be found by the relay's peeks: %v", err)
	}
	if counting.peeks.Load() == 0 {
		t.Error("the relay found the event without peeking")
	}
}

// Rule: an idle lane on such a store claims at most once per poll
// interval; the closer looks in between are peeks.
func TestIdleLaneClaimsOnlyAtPollInterval(t *testing.T) {
	e := newEnv(t)
	counting := &countingStore{Store: e.store}
	e.store = counting
	const poll = 100 * time.Millisecond
	e.start(e.lane(func(l *Lane) { l.PollInterval = poll }))
	e.enqueue(events("w", "", 1)...)
	if err := waitCtx(t, 5*time.Second, func(ctx context.Context) error { return e.pub.WaitDistinct(ctx, 1) }); err != nil {
		t.Fatal(err)
	}
	claims, peeks := counting.claims.Load(), counting.peeks.Load()
	const idle = 1000 * time.Millisecond
	time.Sleep(idle)
	claimed := counting.claims.Load() - claims
	if most := int64(idle/poll) + 1; claimed > most {
		t.Errorf("an idle lane claimed %d times in %v; at most %d with poll_interval %v", claimed, idle, most, poll)
	}
	if counting.peeks.Load() == peeks {
		t.Error("no peeks while the lane went idle")
	}
}
