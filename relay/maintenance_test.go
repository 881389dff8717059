package relay

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// Rule: events older than discard_after are deleted instead of published.
func TestStaleEventsAreDiscarded(t *testing.T) {
	e := newEnv(t)
	e.enqueue(events("old", "", 3)...)
	time.Sleep(60 * time.Millisecond) // age them past discard_after on the DB clock
	r := e.start(e.lane(func(l *Lane) { l.DiscardAfter = 50 * time.Millisecond }))
	waitFor(t, 30*time.Second, "3 discarded", func() bool { return r.total(func(s BatchStats) int { return s.Discarded }) == 3 })
	if e.pub.Distinct() != 0 {
		t.Fatalf("a stale event was published")
	}
	if _, err := e.store.Get(context.Background(), e.table, "old-000"); err == nil {
		t.Fatalf("a discarded row is still in the table")
	}
	e.enqueue(events("fresh", "", 1)...)
	waitFor(t, 30*time.Second, "the fresh event", func() bool { return e.pub.Count("fresh-000") == 1 })
}

// Rule: retention deletes old delivered rows, and runs at most once per
// interval across every worker and process of the lane.
func TestRetentionRunsOncePerInterval(t *testing.T) {
	e := newEnv(t)
	e.enqueue(events("r", "", 25)...)
	e.start(e.lane())
	waitFor(t, 5*time.Second, "delivered", func() bool { return e.stats().Delivered == 25 })
	l := e.lane(func(l *Lane) {
		l.Retention = Retention{Delivered: time.Millisecond, Interval: time.Hour, BatchSize: 10}
	}).WithDefaults()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := &maintainer{store: e.store, lane: l, log: log}
	b := &maintainer{store: e.store, lane: l, log: log}
	time.Sleep(5 * time.Millisecond)
	if n := a.runOnce(context.Background()); n != 25 {
		t.Fatalf("cleanup deleted %d rows in batches of 10, want all 25", n)
	}
	e.enqueue(events("r2", "", 1)...)
	waitFor(t, 5*time.Second, "delivered", func() bool { return e.stats().Delivered == 1 })
	if n := b.runOnce(context.Background()); n != 0 {
		t.Fatalf("a second maintainer ran within the interval and deleted %d rows", n)
	}
	if st := e.stats(); st.Delivered != 1 {
		t.Fatalf("stats after cleanup: %+v", st)
	}
}
