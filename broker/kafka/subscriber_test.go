package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/kafka"
	"github.com/heraldhq/herald/projector/projectortest"
)

// TestSubscriberProjects10k projects 10,000 events from a kfake topic of
// four partitions, consumed by a group of two projector processes, into a
// counting read model, and checks per-key order.
func TestSubscriberProjects10k(t *testing.T) {
	const topic = "count"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addrs := c.ListenAddrs()
	pub, err := kafka.New(context.Background(), kafka.Config{Brokers: addrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	group := projectortest.Name("g")
	projectortest.RunSource(t, projectortest.SourceConfig{
		KeyOrder: true,
		Subscribe: func(tb testing.TB) broker.Subscriber {
			s, err := kafka.NewSubscriber(context.Background(), kafka.SubscriberConfig{Brokers: addrs, Group: group, Topics: []string{topic}})
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
				msgs[i] = broker.Message{Event: ev, Destination: topic}
			}
			for i, r := range pub.Publish(ctx, msgs) {
				if r.Err != nil {
					tb.Fatalf("publish %s: %v", evs[i].ID, r.Err)
				}
			}
		},
	})
}

// TestSubscriberForwardedEventsOnce: 20 rows that copied an incoming
// CloudEvent's ce_id and ce_type (varied case), enqueued by plain SQL and
// relayed, are each projected once under their own id.
func TestSubscriberForwardedEventsOnce(t *testing.T) {
	const topic = "fwd"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addrs := c.ListenAddrs()
	pub, err := kafka.New(context.Background(), kafka.Config{Brokers: addrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	group := projectortest.Name("g")
	projectortest.RunForwarded(t, projectortest.ForwardedConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber {
			s, err := kafka.NewSubscriber(context.Background(), kafka.SubscriberConfig{Brokers: addrs, Group: group, Topics: []string{topic}})
			if err != nil {
				tb.Fatal(err)
			}
			return s
		},
		Publisher: pub, Destination: topic, HeaderPrefix: kafka.HeaderPrefix,
	})
}
