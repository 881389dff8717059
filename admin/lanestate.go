package admin

import (
	"context"
	"time"

	"github.com/heraldhq/herald/store"
)

// BrokerState is a lane's broker as last reported by a relay, in
// LaneStatus (`herald status --json`, GET /api/lanes).
type BrokerState struct {
	// Name is the broker's name in the config.
	Name string `json:"name"`
	// Up is false while the reporting relay finds the broker unreachable.
	Up bool `json:"up"`
	// Since is when the broker's state last changed.
	Since time.Time `json:"since"`
	// Error is the error that began the outage (absent when up).
	Error string `json:"error,omitempty"`
	// Node is the relay process that reported it.
	Node string `json:"node"`
}

// SetState fills the lane's pause and broker state from its row of
// herald_lane_state.
func (s *LaneStatus) SetState(st store.LaneState) {
	s.Paused = st.Paused
	if st.Paused && !st.PausedAt.IsZero() {
		at := st.PausedAt.UTC()
		s.PausedAt = &at
	}
	if st.Broker != "" {
		s.Broker = &BrokerState{Name: st.Broker, Up: st.BrokerUp, Since: st.BrokerSince.UTC(), Error: st.BrokerError, Node: st.Node}
	}
}

// AddLaneStates reads herald_lane_state from st and sets each lane's state.
func AddLaneStates(ctx context.Context, st store.Store, lanes []LaneStatus) error {
	if len(lanes) == 0 {
		// A store only projections use may have no lane state table.
		return nil
	}
	states, err := st.LaneStates(ctx)
	if err != nil {
		return err
	}
	for i := range lanes {
		if s, ok := states[lanes[i].Name]; ok {
			lanes[i].SetState(s)
		}
	}
	return nil
}

// StateText is the lane's state in one word or phrase for `herald status`:
// "store unreachable" (or another kind of StoreError), "paused", "broker
// down since …", or "ok".
func (s LaneStatus) StateText() string {
	switch {
	case s.unreadable != "":
		return s.unreadable
	case s.StoreError != "":
		return "store unreadable"
	case s.Paused:
		return "paused"
	case s.Broker != nil && !s.Broker.Up:
		return "broker " + s.Broker.Name + " down since " + s.Broker.Since.Format(time.RFC3339)
	}
	return "ok"
}
