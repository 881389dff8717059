package rocketmq

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// TestUnreachableNameServer needs no RocketMQ: with the name server down,
// a publish fails by its deadline with a retryable error, and Close leaves
// no goroutine behind (TestMain checks).
func TestUnreachableNameServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, err := New(context.Background(), Config{NameServers: []string{addr}, Retries: -1, SendTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	msgs := []broker.Message{{Destination: "t", Event: herald.Event{ID: herald.NewID(), Type: "T", PartitionKey: "k", Payload: []byte("{}")}},
		{Destination: "t", Event: herald.Event{ID: herald.NewID(), Type: "T", PartitionKey: "k", Payload: []byte("{}")}}}
	res := p.Publish(ctx, msgs)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Publish took %s with a 2s deadline", d)
	}
	for i, r := range res {
		if r.Err == nil || herald.IsPermanent(r.Err) {
			t.Errorf("message %d: want a retryable error, got %v", i, r.Err)
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
