package relay

import (
	"context"
	"log/slog"
	"reflect"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// newBreakers makes one breaker per broker connection: lanes given the same
// Publisher share it. It registers them with cfg.Health and returns each
// lane's breaker by lane name.
func newBreakers(cfg Config) map[string]*breaker {
	cfg.Health.setLogger(cfg.Logger)
	byPub := map[any]*breaker{}
	byLane := make(map[string]*breaker, len(cfg.Lanes))
	var made []*breaker
	for _, l := range cfg.Lanes {
		var key any = l.Name
		if reflect.TypeOf(l.Publisher).Comparable() {
			key = l.Publisher
		}
		b, ok := byPub[key]
		if !ok {
			b = newBreaker(l.Broker, cfg.Logger.With(slog.String("node", cfg.Node)), cfg.ProbeInitial, cfg.ProbeMax)
			b.pinger = pingerOf(l)
			b.pingTimeout = l.PublishTimeout
			byPub[key] = b
			made = append(made, b)
		}
		b.lanes = append(b.lanes, l.Name)
		byLane[l.Name] = b
	}
	// Registered once complete: health checks (the admin server may be
	// serving already) read a breaker's lanes under its lock, which the
	// appends above do not take.
	for _, b := range made {
		cfg.Health.add(b)
	}
	return byLane
}

// ping asks the broker, when it can be pinged, whether it is there, and
// records the answer: probe says whether this is a probe of a down broker
// (else the start-up check). A broker that cannot be pinged, or an error
// that is not about reachability, ends a probe without a verdict.
func (b *breaker) ping(ctx context.Context, probe bool) {
	if b.pinger == nil {
		if probe {
			b.probeDone()
		}
		return
	}
	pctx, cancel := context.WithTimeout(ctx, b.pingTimeout)
	defer cancel()
	err := b.pinger.Ping(pctx)
	switch {
	case err == nil:
		b.answered()
	case herald.IsUnavailable(err) && ctx.Err() == nil:
		b.unreachable(err, probe)
	case probe:
		b.probeDone()
	}
}

// pingAtStart checks every pingable broker once, at the relay's start, so
// that one down from the start shows as down before any event comes.
func pingAtStart(ctx context.Context, breakers map[string]*breaker) {
	seen := map[*breaker]bool{}
	for _, b := range breakers {
		if seen[b] || b.pinger == nil {
			continue
		}
		seen[b] = true
		b.ping(ctx, false)
	}
}

// pingerOf is how the relay checks a lane's broker without an event: its
// Pinger, or its DestinationPinger bound to the lane's destination, or nil.
func pingerOf(l Lane) broker.Pinger {
	switch p := l.Publisher.(type) {
	case broker.Pinger:
		return p
	case broker.DestinationPinger:
		return destinationPinger{p, l.Destination}
	}
	return nil
}

// destinationPinger pings the endpoint of one destination.
type destinationPinger struct {
	p    broker.DestinationPinger
	dest broker.Template
}

func (d destinationPinger) Ping(ctx context.Context) error { return d.p.PingDestination(ctx, d.dest) }
