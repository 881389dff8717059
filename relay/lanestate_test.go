package relay

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// Rule: a lane paused in the database (as `herald lane pause` does from
// another process) claims nothing from the next poll on, and delivers its
// backlog once resumed.
func TestPausedLaneClaimsNothing(t *testing.T) {
	e := newEnv(t)
	ls := e.store
	ctx := context.Background()
	if err := ls.SetLanePaused(ctx, "test", true); err != nil {
		t.Fatal(err)
	}
	r := e.start(e.lane())
	e.enqueue(events("p", "", 10)...)
	// Twenty poll intervals: a relay that ignored the pause would have
	// delivered them within one.
	time.Sleep(20 * e.lane().PollInterval)
	if n := r.total(func(s BatchStats) int { return s.Claimed }); n != 0 {
		t.Fatalf("a paused lane claimed %d events", n)
	}
	if err := ls.SetLanePaused(ctx, "test", false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the backlog delivered after resume", func() bool { return e.stats().Delivered == 10 })

	// Paused while running: obeyed within a poll interval or so.
	if err := ls.SetLanePaused(ctx, "test", true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * e.lane().PollInterval) // the pause is read every poll interval
	before := r.total(func(s BatchStats) int { return s.Claimed })
	e.enqueue(events("q", "", 10)...)
	time.Sleep(20 * e.lane().PollInterval)
	if n := r.total(func(s BatchStats) int { return s.Claimed }); n != before {
		t.Fatalf("a lane paused while running claimed %d more events", n-before)
	}
}

// Rule: the relay writes its broker's state to herald_lane_state at start
// and on every change, so another process can show it.
func TestBrokerStateIsStored(t *testing.T) {
	e := newEnv(t)
	ls := e.store
	e.pub.SetDown(herald.Unavailable(errors.New("connection refused")))
	e.start(e.lane(func(l *Lane) { l.Broker = "mem" }))
	e.enqueue(events("s", "", 3)...)
	state := func() store.LaneState {
		st, err := ls.LaneStates(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return st["test"]
	}
	waitFor(t, 10*time.Second, "the outage stored", func() bool {
		s := state()
		return s.Broker == "mem" && !s.BrokerUp && s.BrokerError != "" && s.Node == "test"
	})
	if st := e.stats(); st.Dead != 0 || st.Retrying != 0 {
		t.Fatalf("an outage must cost no attempts: %+v", st)
	}
	e.pub.SetDown(nil)
	waitFor(t, 10*time.Second, "the recovery stored", func() bool { return state().BrokerUp })
	waitFor(t, 10*time.Second, "the events delivered", func() bool { return e.stats().Delivered == 3 })
}
