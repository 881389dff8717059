package relay

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/storetest"
)

// countingStore counts the claims and peeks a relay makes of its store.
type countingStore struct {
	store.Store
	claims, peeks atomic.Int64
	// lastGap is the time between the last two peeks, in ns.
	lastPeek, lastGap atomic.Int64
}

func (c *countingStore) Claim(ctx context.Context, p store.ClaimParams) ([]store.Record, error) {
	c.claims.Add(1)
	return c.Store.Claim(ctx, p)
}

func (c *countingStore) Ready(ctx context.Context, s store.Scope) (bool, error) {
	c.peeks.Add(1)
	now := time.Now().UnixNano()
	if last := c.lastPeek.Swap(now); last != 0 {
		c.lastGap.Store(now - last)
	}
	return c.Store.(store.Peeker).Ready(ctx, s)
}

// plainInsert enqueues one event with the documented plain SQL, as another
// process in any language would: no in-process wakeup.
func (e *env) plainInsert(id string) {
	e.t.Helper()
	_, err := e.store.DB().Exec(storetest.PlainInsert(e.store.Dialect(), e.table), id, "t", "Happened", []byte(`{}`))
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

// Rule: an idle lane on such a store keeps peeking, its pauses backing off
// to idlePeek and no further: an event another process inserts without a
// wakeup long after the lane went idle is relayed, though poll_interval is
// an hour.
func TestIdleLanePeeksAtIdlePeek(t *testing.T) {
	e := newEnv(t)
	counting := &countingStore{Store: e.store}
	e.store = counting
	e.start(e.lane(func(l *Lane) { l.PollInterval = time.Hour }))
	e.enqueue(events("w", "", 1)...)
	if err := waitCtx(t, 5*time.Second, func(ctx context.Context) error { return e.pub.WaitDistinct(ctx, 1) }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the idle peeks backed off to idlePeek", func() bool {
		return time.Duration(counting.lastGap.Load()) >= idlePeek*3/4
	})
	settled := counting.peeks.Load()
	waitFor(t, 10*time.Second, "ten more idle peeks (they back off no further)", func() bool {
		return counting.peeks.Load() >= settled+10
	})
	peeks := counting.peeks.Load()
	e.plainInsert("plain-idle")
	if err := waitCtx(t, 10*time.Second, func(ctx context.Context) error { return e.pub.WaitDistinct(ctx, 2) }); err != nil {
		t.Fatalf("an idle lane must still find an event inserted without a wakeup: %v", err)
	}
	if counting.peeks.Load() == peeks {
		t.Error("the event was found without a peek")
	}
	if gap := time.Duration(counting.lastGap.Load()); gap > 2*idlePeek {
		t.Errorf("idle peeks %v apart, want at most idlePeek (%v)", gap, idlePeek)
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

// Rule: an express worker that has served no quiet tenant lately backs off
// its empty looks from poll_interval to expressIdlePoll (never below
// poll_interval), starts over after a wakeup, and looks every poll_interval
// while it serves quiet tenants.
func TestExpressWorkerIdleBackOff(t *testing.T) {
	for _, poll := range []time.Duration{20 * time.Millisecond, 2 * time.Second} {
		w := &worker{express: true, notified: true, lane: Lane{PollInterval: poll, BatchSize: 100}}
		p := newPacer(w)
		var got []time.Duration
		for range 7 {
			p.claimed(0, nil)
			got = append(got, p.delay)
		}
		want := []time.Duration{poll, 2 * poll, 4 * poll, 8 * poll, 16 * poll, 16 * poll, 16 * poll}
		if poll > expressIdlePoll {
			want = []time.Duration{poll, poll, poll, poll, poll, poll, poll}
		}
		if !slices.Equal(got, want) {
			t.Errorf("poll %v: idle delays %v, want %v", poll, got, want)
		}
		p.idle = minPoll // what a wakeup does
		if p.claimed(0, nil); p.delay != poll {
			t.Errorf("poll %v: after a wakeup the delay is %v, want poll_interval", poll, p.delay)
		}
		w.expr.served("quiet", 1, true, time.Now())
		for range 3 {
			if p.claimed(0, nil); p.delay != poll {
				t.Errorf("poll %v: serving a quiet tenant, delay %v, want poll_interval", poll, p.delay)
			}
		}
	}
}

// Rule: without notifications, an idle express worker woken before the
// commit it was told of looks again after 1, 2, 4, … ms as the others do,
// and backs off beyond poll_interval only after that.
func TestExpressWorkerIdleBackOffAfterShortLooks(t *testing.T) {
	const poll = 8 * time.Millisecond
	w := &worker{express: true, lane: Lane{PollInterval: poll, BatchSize: 100}}
	p := newPacer(w)
	var got []time.Duration
	for range 8 {
		p.claimed(0, nil)
		got = append(got, p.delay)
	}
	ms := time.Millisecond
	want := []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms, 16 * ms, 32 * ms, 64 * ms, 128 * ms}
	if !slices.Equal(got, want) {
		t.Errorf("idle delays %v, want %v", got, want)
	}
}

// Rule: a log lane's polling workers, which claim only handed-over rows,
// never peek (a peek says yes all through a log lane's drain, whose rows
// are pending until the reader's marks) and, after claims that found
// nothing, take turns: one claim per poll_interval between them, not one
// each. A claim that returned rows is followed at once.
func TestLogLaneWorkersTakeTurnsToClaim(t *testing.T) {
	const poll = 150 * time.Millisecond
	lastTurn := new(atomic.Int64)
	lane := Lane{PollInterval: poll, BatchSize: 100, Source: SourceLog}
	var pacers []*pacer
	for range 2 {
		p := newPacer(&worker{store: &countingStore{}, lane: lane, lastTurn: lastTurn})
		if p.peeker != nil {
			t.Fatal("a log lane's worker peeks")
		}
		p.claimed(0, nil)
		if p.delay != poll {
			t.Fatalf("after an empty claim the delay is %v, want poll_interval", p.delay)
		}
		pacers = append(pacers, p)
	}
	start := time.Now()
	claimedAt := make(chan time.Duration, 2)
	for _, p := range pacers {
		go func() {
			if p.awaitWork(context.Background()) {
				claimedAt <- time.Since(start)
			}
		}()
	}
	first, second := <-claimedAt, <-claimedAt
	if first > poll+poll/2 || second-first < poll*3/4 {
		t.Errorf("the two workers claimed %v and %v after their empty claims; want one after about %v and the other a poll_interval later",
			first, second, poll)
	}
	p := pacers[0]
	if p.claimed(lane.BatchSize, nil); p.delay != 0 {
		t.Errorf("after a full batch the delay is %v, want 0", p.delay)
	}
	if p.claimed(3, nil); p.delay >= poll {
		t.Errorf("after a claim that returned rows the delay is %v, want far below poll_interval", p.delay)
	}
}
