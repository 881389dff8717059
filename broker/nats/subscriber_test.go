package nats_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	heraldnats "github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/projector/projectortest"
)

// TestSubscriberProjects10k projects 10,000 events from a durable pull
// consumer, shared by two projector processes, into a counting read model.
func TestSubscriberProjects10k(t *testing.T) {
	url := requireMachineNATS(t)
	sfx := suffix()
	stream, prefix := "HERALD_SUB_"+sfx, "hsub"+sfx
	pub := newPublisher(t, url, stream, prefix)
	deleteStream(t, url, stream)
	projectortest.RunSource(t, projectortest.SourceConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := heraldnats.NewSubscriber(ctx, heraldnats.SubscriberConfig{URL: url, Stream: stream, Durable: "count"})
			if err != nil {
				tb.Fatal(err)
			}
			return s
		},
		Publish: func(tb testing.TB, evs []herald.Event) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			msgs := make([]broker.Message, len(evs))
			for i, ev := range evs {
				msgs[i] = broker.Message{Event: ev, Destination: prefix + ".count"}
			}
			for i, r := range pub.Publish(ctx, msgs) {
				if r.Err != nil {
					tb.Fatalf("publish %s: %v", evs[i].ID, r.Err)
				}
			}
		},
	})
}
