package bench

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store/sqlite"
)

// countingPublisher accepts everything and counts the messages.
type countingPublisher struct{ n atomic.Int64 }

func (c *countingPublisher) Publish(_ context.Context, msgs []broker.Message) []broker.Result {
	c.n.Add(int64(len(msgs)))
	return make([]broker.Result, len(msgs))
}

func (c *countingPublisher) Close() error { return nil }

// Rule: the broker's drain goes first in the first run and second in the
// next, so a single run is not a drain warmed up by another.
func TestDrainOrderStartsWithTheBrokerAndAlternates(t *testing.T) {
	pub := &countingPublisher{}
	for run, wantBrokerFirst := range []bool{true, false, true, false} {
		order := drainOrder(run, pub)
		if len(order) != 2 {
			t.Fatalf("run %d drains %d times, want 2", run, len(order))
		}
		_, nopFirst := order[0].(Nop)
		_, nopSecond := order[1].(Nop)
		if brokerFirst := order[0] == broker.Publisher(pub) && nopSecond; brokerFirst != wantBrokerFirst || (!brokerFirst && !nopFirst) {
			t.Errorf("run %d: order %T, %T; want the broker first: %v", run, order[0], order[1], wantBrokerFirst)
		}
	}
}

// Rule: every run drains once to each publisher, whatever the order, and
// the broker gets every event of its drains.
func TestThroughputDrainsEachPublisherEveryRun(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "bench.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dest, err := broker.ParseTemplate("bench.{event_type}")
	if err != nil {
		t.Fatal(err)
	}
	pub := &countingPublisher{}
	res, err := Throughput(ctx, Setup{Store: s, Publisher: pub, Destination: dest}, ThroughputParams{Events: 50, Batch: 10, Workers: 1, Runs: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.BrokerRuns) != 3 || len(res.LimitRuns) != 3 {
		t.Errorf("%d broker and %d limit runs, want 3 of each", len(res.BrokerRuns), len(res.LimitRuns))
	}
	if got := pub.n.Load(); got != 150 {
		t.Errorf("the broker got %d messages, want 150", got)
	}
}
