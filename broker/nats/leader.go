package nats

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// leaderCheckTimeout bounds the stream info request that tells a stream
// without a leader from a slow one.
const leaderCheckTimeout = time.Second

// streamDown says why the stream cannot store messages now, or returns nil
// if it can (or the answer says nothing about that): on a cluster, a stream
// whose leader died stores nothing until its replicas elect another, and
// one whose replicas lost their quorum stores nothing until they regain
// it. Neither answers publishes, so silence alone would look like a slow
// server; the stream's info, answered by its leader, tells them apart.
func (p *Publisher) streamDown(ctx context.Context) error {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaderCheckTimeout)
	defer cancel()
	s, err := p.js.Stream(ictx, p.cfg.Stream)
	var apiErr *jetstream.APIError
	switch {
	case err == nil:
		return noQuorum(p.cfg.Stream, s.CachedInfo().Cluster)
	case errors.As(err, &apiErr) && apiErr.Code == 503, isUnavailable(err):
		return fmt.Errorf("nats: stream %s does not answer (no leader, or its replicas lost their quorum): %w", p.cfg.Stream, err)
	default:
		return nil
	}
}

// leaderless marks the results of a publish round that got no answer at
// all unavailable too when the stream has no leader: the relay's breaker
// then holds the lane and probes (Ping) instead of spending every event's
// attempts on timeouts until the election is over. They stay ambiguous
// (the old leader may have stored some; Nats-Msg-Id dedupes the retry).
func (p *Publisher) leaderless(ctx context.Context, futures []jetstream.PubAckFuture, results []broker.Result) {
	down := p.streamDown(ctx)
	if down == nil {
		return
	}
	for i, f := range futures {
		if f != nil && herald.IsAmbiguous(results[i].Err) && !herald.IsUnavailable(results[i].Err) {
			results[i].Err = herald.Unavailable(fmt.Errorf("%w (%v)", results[i].Err, down))
		}
	}
}

// noQuorum says why a stream's replicas cannot store now: no leader, or a
// leader that has not yet noticed it lost its followers (it answers info
// requests for a while, but cannot commit) and sees fewer than a majority
// of the replicas, itself included, online.
func noQuorum(stream string, c *jetstream.ClusterInfo) error {
	if c == nil {
		return nil // a single server
	}
	if c.Leader == "" {
		return fmt.Errorf("nats: stream %s has no leader (replicas electing one)", stream)
	}
	up := 1
	for _, r := range c.Replicas {
		// Offline, not Current: a follower catching up after a restart is
		// not current for a while, yet counts for the quorum.
		if !r.Offline {
			up++
		}
	}
	if all := len(c.Replicas) + 1; up <= all/2 {
		return fmt.Errorf("nats: stream %s: %d of its %d replicas online, fewer than a quorum", stream, up, all)
	}
	return nil
}
