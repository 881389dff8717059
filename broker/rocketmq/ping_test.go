package rocketmq

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// Rule: Ping answers nil while a name server accepts connections and an
// unavailable error once none does; a send that finds no route because no
// name server answers (a cluster down before the first route look-up) is
// unavailable too, so the relay's breaker spends no attempt on it.
func TestPingAndNoRouteWithNameServersDown(t *testing.T) {
	c := startFake(t)
	p := newFakePublisher(t, c, Config{Group: "ping"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("Ping with the cluster up: %v", err)
	}
	c.Stop()
	if err := p.Ping(ctx); err == nil || !herald.IsUnavailable(err) {
		t.Fatalf("Ping with the cluster stopped = %v, want unavailable", err)
	}
	// A topic never looked up: the client has no route and asks the (down) name server.
	msg := broker.Message{Destination: "never-routed", Event: herald.Event{ID: herald.NewID(), Topic: "t", Type: "T"}, Attempt: 1}
	r := p.Publish(ctx, []broker.Message{msg})
	t.Logf("send with no route and the name server down: %v", r[0].Err)
	if r[0].Err == nil || !herald.IsUnavailable(r[0].Err) || herald.IsPermanent(r[0].Err) {
		t.Fatalf("send = %v, want an unavailable, retryable error", r[0].Err)
	}
}
