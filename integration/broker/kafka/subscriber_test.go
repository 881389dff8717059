package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

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

// TestSubscriberReadsExactSpelling: records from another producer that
// carry ce_id and ce_type twice, exactly and in another case, are read by
// the exact spelling, each projected once.
func TestSubscriberReadsExactSpelling(t *testing.T) {
	const topic = "raw"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	addrs := c.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	group := projectortest.Name("g")
	projectortest.RunRawColliding(t, projectortest.RawConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber {
			s, err := kafka.NewSubscriber(context.Background(), kafka.SubscriberConfig{Brokers: addrs, Group: group, Topics: []string{topic}})
			if err != nil {
				tb.Fatal(err)
			}
			return s
		},
		Publish: func(tb testing.TB, msgs []projectortest.RawMessage) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for _, m := range msgs {
				rec := &kgo.Record{Topic: topic, Value: m.Body}
				for k, v := range m.Headers {
					rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
				}
				if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
					tb.Fatalf("produce: %v", err)
				}
			}
		},
		HeaderPrefix: kafka.HeaderPrefix,
	})
}
