package awstest

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// Message is a message of partition key key to dest.
func Message(dest, key string, payload []byte) broker.Message {
	return broker.Message{Destination: dest, Attempt: 1, Event: herald.Event{ID: herald.NewID(), Topic: "t", Type: "T",
		PartitionKey: key, Payload: payload}}
}

// Publish publishes msgs with a 30s deadline.
func Publish(p broker.Publisher, msgs ...broker.Message) []broker.Result {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return p.Publish(ctx, msgs)
}

// PublishTo returns a projectortest Publish function: the events to dest
// through p, every one accepted or the test fails.
func PublishTo(p broker.Publisher, dest string) func(tb testing.TB, evs []herald.Event) {
	return func(tb testing.TB, evs []herald.Event) {
		tb.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		msgs := make([]broker.Message, len(evs))
		for i, ev := range evs {
			msgs[i] = broker.Message{Event: ev, Destination: dest, Attempt: 1}
		}
		for i, r := range p.Publish(ctx, msgs) {
			if r.Err != nil {
				tb.Fatalf("publish %s: %v", evs[i].ID, r.Err)
			}
		}
	}
}
