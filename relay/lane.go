package relay

import (
	"github.com/heraldhq/herald/backoff"
	"github.com/heraldhq/herald/lane"
)

// The lane settings are declared in package lane, a leaf that package
// config reads files with; these are its names as the relay has always
// given them.

// Lane is one outbox table (or a filtered part of one) relayed to one
// broker (lane.Lane).
type Lane = lane.Lane

// Retry is a lane's retry policy (lane.Retry).
type Retry = lane.Retry

// Retention is how long finished rows are kept (lane.Retention).
type Retention = lane.Retention

// Ordering is a lane's ordering promise (lane.Ordering).
type Ordering = lane.Ordering

// OnDead is what an ordered lane does with a key whose head event went
// dead (lane.OnDead).
type OnDead = lane.OnDead

// OnDelivered is what a log lane's marker does with the rows of delivered
// events (lane.OnDelivered).
type OnDelivered = lane.OnDelivered

// Source is where a lane finds its events (lane.Source).
type Source = lane.Source

// BeforePublish runs before a message is published (lane.BeforePublish).
type BeforePublish = lane.BeforePublish

// Jitter is how a backoff is randomised (backoff.Jitter).
type Jitter = backoff.Jitter

// The settings' values; see package lane.
const (
	OrderingNone        = lane.OrderingNone
	OrderingKey         = lane.OrderingKey
	OnDeadPark          = lane.OnDeadPark
	OnDeadSkip          = lane.OnDeadSkip
	OnDeliveredMark     = lane.OnDeliveredMark
	OnDeliveredDelete   = lane.OnDeliveredDelete
	OnDeliveredLeave    = lane.OnDeliveredLeave
	SourcePoll          = lane.SourcePoll
	SourceLog           = lane.SourceLog
	StrategyExponential = lane.StrategyExponential
	JitterFull          = backoff.JitterFull
	JitterEqual         = backoff.JitterEqual
	JitterNone          = backoff.JitterNone
	MaxBatchSize        = lane.MaxBatchSize
)
