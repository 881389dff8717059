package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// Rule: a lane paused in the database (as `herald lane pause` does from
// another process) claims nothing from the next poll on, and delivers its
// backlog once resumed. The relay reads the pauses once per poll interval:
// twenty reads are twenty intervals in which a relay that ignored the pause
// would have claimed.
func TestPausedLaneClaimsNothing(t *testing.T) {
	e := newEnv(t)
	w := e.watch()
	ls := e.store
	ctx := context.Background()
	if err := ls.SetLanePaused(ctx, "test", true); err != nil {
		t.Fatal(err)
	}
	logs := &testenv.LogLines{}
	e.startObserved(Config{Lanes: []Lane{e.lane()}, Logger: slog.New(logs)})
	e.enqueue(events("p", "", 10)...)
	pollIntervals := func(n int) {
		t.Helper()
		from := w.stateReadCount()
		waitFor(t, 30*time.Second, fmt.Sprintf("%d reads of the lane state", n), func() bool { return w.stateReadCount() >= from+n })
	}
	pollIntervals(20)
	if n := w.claimCount(); n != 0 {
		t.Fatalf("a paused lane made %d claims", n)
	}
	if err := ls.SetLanePaused(ctx, "test", false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the backlog delivered after resume", func() bool { return e.stats().Delivered == 10 })

	// Paused while running: obeyed once the relay has read the pause.
	if err := ls.SetLanePaused(ctx, "test", true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the pause read", func() bool { return logs.Count("lane paused") == 2 })
	pollIntervals(1) // a claim under way when the pause was read is over
	before := w.claimCount()
	e.enqueue(events("q", "", 10)...)
	pollIntervals(20)
	if n := w.claimCount() - before; n != 0 {
		t.Fatalf("a lane paused while running made %d more claims", n)
	}
	if st := e.stats(); st.Pending != 10 {
		t.Fatalf("a lane paused while running changed its new rows: %+v", st)
	}
}

// Rule: the relay writes its broker's state to herald_lane_state at start
// and on every change, so another process can show it; the outage's
// probes cost no attempt: every row is pending with none spent while the
// broker is down, and delivered after one attempt once it is back.
func TestBrokerStateIsStored(t *testing.T) {
	e := newEnv(t)
	ls := e.store
	e.pub.SetDown(herald.Unavailable(errors.New("connection refused")))
	r := e.startObserved(Config{Lanes: []Lane{e.lane(func(l *Lane) { l.Broker = "mem" })},
		ProbeInitial: 10 * time.Millisecond, ProbeMax: 20 * time.Millisecond})
	evs := events("s", "", 3)
	e.enqueue(evs...)
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
	// Probes claim a row each and release it: wait until several did, so
	// that a release that kept its attempt would show on the rows (or
	// until a row was charged a failure instead, which the check reports).
	waitFor(t, 10*time.Second, "probes released by the down broker", func() bool {
		return r.total(func(s BatchStats) int { return s.Released }) >= 10 ||
			r.total(func(s BatchStats) int { return s.Retried + s.Dead }) > 0
	})
	for _, ev := range evs {
		// A row a probe holds right now counts the probe's attempt until
		// its release gives it back; every other row is pending with none.
		rec, want := e.get(ev.ID), 0
		if rec.Status == store.StatusInFlight {
			want = 1
		}
		switch {
		case rec.Status != store.StatusPending && rec.Status != store.StatusInFlight:
			t.Errorf("during the outage %s is %s, want pending (or in flight under a probe)", ev.ID, rec.Status)
		case rec.Attempts != want:
			t.Errorf("during the outage %s is %s after %d attempts, want %d", ev.ID, rec.Status, rec.Attempts, want)
		}
	}
	e.pub.SetDown(nil)
	waitFor(t, 10*time.Second, "the recovery stored", func() bool { return state().BrokerUp })
	waitFor(t, 10*time.Second, "the events delivered", func() bool { return e.stats().Delivered == 3 })
	for _, ev := range evs {
		if rec := e.get(ev.ID); rec.Attempts != 1 {
			t.Errorf("%s delivered after %d attempts, want 1: the outage must cost none", ev.ID, rec.Attempts)
		}
	}
}
