package giftwall_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/examples/giftwall"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// TestRobotLaneDiscardsStaleEvents: robot shows older than discard_after
// are deleted instead of published; fresh ones are published, and the
// lane's retention then deletes the delivered rows.
func TestRobotLaneDiscardsStaleEvents(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		a := newApp(t, s, giftwall.Config{})
		table := a.Config().RobotTable
		for i := range 10 {
			if err := a.Robots.Show(ctx, "nebula", "r1", "bot1", "rose"); err != nil {
				t.Fatal(err)
			}
			if i == 4 {
				backdate(t, s, table, time.Minute) // the first five are a minute old
			}
		}
		var discarded, delivered relayCount
		pub := memory.New(memory.Config{})
		lane := laneOf(a.Lanes(pub, 30*time.Second), "robot")
		lane.Retention = relay.Retention{Delivered: time.Millisecond, Interval: 50 * time.Millisecond}
		runRelay(t, s, relay.ObserverFunc(func(b relay.BatchStats) {
			discarded.add(b.Discarded)
			delivered.add(b.Delivered)
		}), lane)
		eventually(t, 15*time.Second, "five published, five discarded", func() bool {
			return discarded.get() == 5 && delivered.get() == 5
		})
		if len(pub.Records()) != 5 {
			t.Fatalf("%d robot shows published, want the 5 fresh ones", len(pub.Records()))
		}
		eventually(t, 15*time.Second, "retention deleted the delivered rows", func() bool {
			st, err := s.Stats(ctx, store.Scope{Table: table})
			return err == nil && st == (store.LaneStats{})
		})
	})
}

// backdate makes every row of table older by d.
func backdate(t *testing.T, s store.Store, table string, d time.Duration) {
	t.Helper()
	q := "UPDATE " + table + " SET created_at = created_at - ?"
	var arg any = d.Milliseconds()
	if s.Dialect().Name == "mysql" {
		q, arg = "UPDATE "+table+" SET created_at = created_at - INTERVAL ? SECOND", int(d.Seconds())
	}
	if _, err := s.DB().Exec(q, arg); err != nil {
		t.Fatal(err)
	}
}

// relayCount is a counter an observer adds to.
type relayCount struct{ n atomic.Int64 }

func (c *relayCount) add(n int)  { c.n.Add(int64(n)) }
func (c *relayCount) get() int64 { return c.n.Load() }
