package rocketmq

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// Rule: with the RocketMQ servers stopped, a send fails as unavailable (the
// relay's breaker then spends no attempt), still retryable and not
// permanent.
func TestStoppedServersAreUnavailable(t *testing.T) {
	c := startFake(t)
	p := newFakePublisher(t, c, Config{Group: "unavail"})
	msg := broker.Message{Destination: "unavail", Event: herald.Event{ID: herald.NewID(), Topic: "t", Type: "T"}, Attempt: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r := p.Publish(ctx, []broker.Message{msg}); r[0].Err != nil {
		t.Fatalf("first send: %v", r[0].Err)
	}
	c.Stop()
	r := p.Publish(ctx, []broker.Message{msg})
	t.Logf("send with the servers stopped: %v", r[0].Err)
	if r[0].Err == nil || !herald.IsUnavailable(r[0].Err) || herald.IsPermanent(r[0].Err) {
		t.Fatalf("send with the servers stopped = %v, want an unavailable, retryable error", r[0].Err)
	}
}
