package store

import (
	"context"
	"time"
)

// LaneState is what relays share about a lane through the database, in
// the herald_lane_state table: whether an operator paused it, and the
// state of its broker as last reported by a relay.
type LaneState struct {
	Lane string
	// Paused lanes claim nothing, in every relay process.
	Paused bool
	// PausedAt is when it was paused (zero when not paused).
	PausedAt time.Time
	// Broker is the broker the last report was about ("" when none came).
	Broker string
	// BrokerUp is false while the reporting relay finds the broker unreachable.
	BrokerUp bool
	// BrokerSince is when the broker's state last changed.
	BrokerSince time.Time
	// BrokerError is the error that began the outage ("" when up).
	BrokerError string
	// Node is the relay process that reported the broker's state.
	Node string
}

// BrokerReport is one relay's word on a broker, for SetBrokerState.
type BrokerReport struct {
	Broker string
	Up     bool
	Error  string
	Node   string
}

// LaneStater is part of every Store: lanes' shared state in
// herald_lane_state (created by Migrate). Times are the database clock's.
type LaneStater interface {
	// LaneStates returns the state of every lane that has a row, by name.
	LaneStates(ctx context.Context) (map[string]LaneState, error)
	// SetLanePaused pauses or resumes lane.
	SetLanePaused(ctx context.Context, lane string, paused bool) error
	// SetBrokerState records a relay's report on the broker of lanes.
	// BrokerSince changes only when the broker's up state does.
	SetBrokerState(ctx context.Context, lanes []string, r BrokerReport) error
}
