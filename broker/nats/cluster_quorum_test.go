package nats_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	heraldnats "github.com/heraldhq/herald/broker/nats"
)

// TestClusterNoQuorumIsUnavailable: with two of three nodes down, a stream
// of 3 replicas has no leader and stores nothing, while the client is still
// connected to the third node. Publishes then get no ack (ambiguous) or
// no responders (nothing stored): either way they must come back
// unavailable, so the relay's breaker holds the lane
// instead of spending attempts until the events go dead, and Ping must say
// unavailable until a leader is back.
func TestClusterNoQuorumIsUnavailable(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The publisher talks to node 2 only, which stays up.
	url := fmt.Sprintf("nats://127.0.0.1:%d", c.opts[2].Port)
	pub, err := heraldnats.New(ctx, heraldnats.Config{URL: url, Stream: "QUORUM", Subjects: []string{"hq.>"},
		CreateStream: true, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	publish := func(within time.Duration) []broker.Result {
		pctx, pcancel := context.WithTimeout(ctx, within)
		defer pcancel()
		var msgs []broker.Message
		for range 5 {
			msgs = append(msgs, broker.Message{Event: herald.Event{ID: herald.NewID(), Topic: "t", Type: "x"}, Destination: "hq.x"})
		}
		return pub.Publish(pctx, msgs)
	}
	// acked publishes a batch and reports whether all of it was stored.
	acked := func() bool {
		for _, r := range publish(2 * time.Second) {
			if r.Err != nil {
				t.Logf("publish: %v", r.Err)
				return false
			}
		}
		return true
	}
	// A new R3 stream elects its leader a moment after it is created
	// (seconds on a busy machine), and the leader's interest in the
	// subjects reaches node 2 a moment after that: until then a publish
	// finds no responders (unavailable, which the relay retries).
	waitUntil(t, 30*time.Second, "the new stream to store a batch", acked)
	c.stop(0)
	c.stop(1)
	for i, r := range publish(time.Second) {
		if !herald.IsUnavailable(r.Err) {
			t.Errorf("no quorum: message %d: %v, want an unavailable error", i, r.Err)
		}
	}
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	err = pub.Ping(pctx)
	pcancel()
	if !herald.IsUnavailable(err) {
		t.Errorf("Ping without quorum = %v, want unavailable", err)
	}
	c.start(0)
	waitUntil(t, 30*time.Second, "Ping to succeed once a leader is back", func() bool {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		defer pcancel()
		return pub.Ping(pctx) == nil
	})
	waitUntil(t, 30*time.Second, "a batch stored once a leader is back", acked)
}
