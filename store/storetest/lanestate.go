package storetest

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

var laneStateTests = []test{
	{"PauseResume", testPauseResume},
	{"BrokerState", testBrokerState},
}

func testPauseResume(t *testing.T, h *harness) {
	ls := h.s
	lane := randomName("lane")
	if err := ls.SetLanePaused(h.ctx, lane, true); err != nil {
		t.Fatalf("[pause] %v", err)
	}
	// A second process sees it: the state is in the database.
	other := h.open(t)
	st, err := other.LaneStates(h.ctx)
	if err != nil || !st[lane].Paused || st[lane].PausedAt.IsZero() {
		errorf(t, "a pause is seen by every process, with its time", "got %+v, %v", st[lane], err)
	}
	if d := time.Since(st[lane].PausedAt); d < -time.Minute || d > time.Minute {
		errorf(t, "paused_at is now on the database clock", "paused_at %v", st[lane].PausedAt)
	}
	first := st[lane].PausedAt
	if err := ls.SetLanePaused(h.ctx, lane, true); err != nil {
		t.Fatalf("[pause] again: %v", err)
	}
	if st, _ := ls.LaneStates(h.ctx); !st[lane].PausedAt.Equal(first) {
		errorf(t, "pausing a paused lane keeps its paused_at", "was %v, now %v", first, st[lane].PausedAt)
	}
	if err := ls.SetLanePaused(h.ctx, lane, false); err != nil {
		t.Fatalf("[resume] %v", err)
	}
	if st, err := other.LaneStates(h.ctx); err != nil || st[lane].Paused || !st[lane].PausedAt.IsZero() {
		errorf(t, "a resume clears the pause", "got %+v, %v", st[lane], err)
	}
}

func testBrokerState(t *testing.T, h *harness) {
	ls := h.s
	a, b := randomName("lane"), randomName("lane")
	if err := ls.SetLanePaused(h.ctx, a, true); err != nil {
		t.Fatalf("[pause] %v", err)
	}
	down := store.BrokerReport{Broker: "nats", Up: false, Error: "connection refused", Node: "n1"}
	if err := ls.SetBrokerState(h.ctx, []string{a, b}, down); err != nil {
		t.Fatalf("[broker state] %v", err)
	}
	st, err := ls.LaneStates(h.ctx)
	if err != nil {
		t.Fatalf("[broker state] %v", err)
	}
	for _, lane := range []string{a, b} {
		s := st[lane]
		if s.Broker != "nats" || s.BrokerUp || s.BrokerError != "connection refused" || s.Node != "n1" || s.BrokerSince.IsZero() {
			errorf(t, "a broker report is kept for each of its lanes", "lane %s: %+v", lane, s)
		}
	}
	if !st[a].Paused {
		errorf(t, "a broker report keeps the lane's pause", "got %+v", st[a])
	}
	since := st[a].BrokerSince
	time.Sleep(20 * time.Millisecond) // the clock must move for the next check to mean anything
	down.Node = "n2"
	if err := ls.SetBrokerState(h.ctx, []string{a}, down); err != nil {
		t.Fatalf("[broker state] %v", err)
	}
	if st, _ := ls.LaneStates(h.ctx); !st[a].BrokerSince.Equal(since) || st[a].Node != "n2" {
		errorf(t, "a report of the same state keeps broker_since", "was %v, now %+v", since, st[a])
	}
	if err := ls.SetBrokerState(h.ctx, []string{a}, store.BrokerReport{Broker: "nats", Up: true, Node: "n1"}); err != nil {
		t.Fatalf("[broker state] %v", err)
	}
	if st, _ := ls.LaneStates(h.ctx); !st[a].BrokerUp || st[a].BrokerError != "" || !st[a].BrokerSince.After(since) {
		errorf(t, "a change of state moves broker_since", "was %v, now %+v", since, st[a])
	}
}
