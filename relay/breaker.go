package relay

import (
	"log/slog"
	"sync"
	"time"

	"github.com/heraldhq/herald/backoff"
	"github.com/heraldhq/herald/broker"
)

// Probe backoff defaults: the first probe after an outage began comes
// after ProbeInitial, each failed one doubles the wait up to ProbeMax.
const (
	defaultProbeInitial = 250 * time.Millisecond
	defaultProbeMax     = 10 * time.Second
)

// breaker is the state of one broker connection, shared by every lane that
// publishes through it. Closed, the lanes claim and publish as usual. A
// publish round that got no answer from the broker, only errors saying it
// is not there (herald.Unavailable), opens it: the lanes stop claiming and
// release what they hold without spending attempts, and one worker at a
// time probes the broker with one event, after a capped exponential
// backoff. Any answer about an event (delivered, or refused for the
// event's own sake) closes it.
type breaker struct {
	name  string
	lanes []string
	log   *slog.Logger
	// changed, when set, is told of every transition (state persistence).
	changed func(BrokerStatus)
	// pinger, when the publisher has one, checks the broker without an
	// event: at start, and for probes that find no event to send.
	pinger      broker.Pinger
	pingTimeout time.Duration

	mu        sync.Mutex
	open      bool
	since     time.Time // when the current state began
	lastErr   string
	probing   bool           // a probe is in flight
	nextProbe time.Time      // no probe before this
	probes    backoff.Series // the probe waits of the current outage
	probeWait time.Duration  // the latest of them
	downTotal time.Duration  // length of finished outages
}

func newBreaker(name string, log *slog.Logger, initial, max time.Duration) *breaker {
	probes := backoff.Series{Policy: backoff.Policy{Initial: initial, Max: max}}
	return &breaker{name: name, log: log, probes: probes, since: time.Now()}
}

// admit says whether a worker may claim now: ok when the breaker is closed,
// or when it is open and this worker gets to probe (probe true: claim one
// event). When not ok, wait is how long until the next probe is due.
func (b *breaker) admit() (ok, probe bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return true, false, 0
	}
	now := time.Now()
	if b.probing || now.Before(b.nextProbe) {
		return false, false, max(b.nextProbe.Sub(now), b.probes.Initial)
	}
	b.probing = true
	return true, true, 0
}

// isOpen reports whether the broker is taken to be unreachable.
func (b *breaker) isOpen() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open
}

// answered records that the broker answered about an event: it is there.
// It closes the breaker and ends any probe.
func (b *breaker) answered() {
	b.mu.Lock()
	if !b.open {
		b.mu.Unlock()
		return
	}
	outage := time.Since(b.since)
	b.open, b.probing, b.probeWait, b.lastErr = false, false, 0, ""
	b.probes.Reset()
	b.since = time.Now()
	b.downTotal += outage
	st := b.statusLocked()
	b.mu.Unlock()
	b.log.Info("broker recovered", slog.String("broker", b.name), slog.Any("lanes", b.lanes),
		slog.Duration("outage", outage.Round(time.Millisecond)))
	b.notify(st)
}

// unreachable records a publish round (or probe) that got no answer, only
// err saying the broker is not there. The first one opens the breaker and
// logs; a failed probe doubles the wait before the next.
func (b *breaker) unreachable(err error, probe bool) {
	b.mu.Lock()
	if probe {
		b.probing = false
	}
	if b.open {
		if probe {
			b.probeWait = b.probes.Next()
			b.nextProbe = time.Now().Add(b.probeWait)
		}
		b.mu.Unlock()
		return
	}
	b.open, b.lastErr = true, err.Error()
	b.since = time.Now()
	b.probes.Reset()
	b.probeWait = b.probes.Next()
	b.nextProbe = b.since.Add(b.probeWait)
	st := b.statusLocked()
	b.mu.Unlock()
	b.log.Error("broker unreachable; its lanes stop claiming and probe it until it answers",
		slog.String("broker", b.name), slog.Any("lanes", b.lanes), slog.String("error", err.Error()))
	b.notify(st)
}

// probeDone ends a probe that published nothing (no event to probe with,
// or the claim failed): another worker, maybe of another lane, may probe
// after the current backoff.
func (b *breaker) probeDone() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.probing {
		b.probing = false
		b.nextProbe = time.Now().Add(b.probeWait)
	}
}

func (b *breaker) notify(st BrokerStatus) {
	if b.changed != nil {
		b.changed(st)
	}
}

// status is the breaker's state for health checks and status.
func (b *breaker) status() BrokerStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.statusLocked()
}

func (b *breaker) statusLocked() BrokerStatus {
	down := b.downTotal
	if b.open {
		down += time.Since(b.since)
	}
	return BrokerStatus{Broker: b.name, Lanes: b.lanes, Up: !b.open, Since: b.since, Error: b.lastErr, OutageTotal: down}
}
