package rabbitmq_test

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/rabbitmq"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector/projectortest"
)

// subQueue declares a fresh durable queue on the test server, deleted at
// the end; it skips (fails with CI=true) when the server is down.
func subQueue(t *testing.T) string {
	t.Helper()
	testenv.RequireTCP(t, "rabbitmq at 127.0.0.1:5672", "127.0.0.1:5672")
	conn, err := amqp.Dial(rabbitmq.DefaultURL)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	q := projectortest.Name("herald-sub")
	if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = ch.QueueDelete(q, false, false, false)
		_ = conn.Close()
	})
	return q
}

// TestSubscriberProjects10k projects 10,000 messages from one queue,
// consumed by two projector processes with manual acks and prefetch, into
// a counting read model.
func TestSubscriberProjects10k(t *testing.T) {
	queue := subQueue(t)
	pub, err := rabbitmq.New(context.Background(), rabbitmq.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	projectortest.RunSource(t, projectortest.SourceConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber {
			s, err := rabbitmq.NewSubscriber(context.Background(), rabbitmq.SubscriberConfig{Queue: queue})
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
				msgs[i] = broker.Message{Event: ev, Destination: queue}
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
// CloudEvent's cloudEvents_id and cloudEvents_type (varied case), enqueued
// by plain SQL and relayed, are each projected once under their own id.
func TestSubscriberForwardedEventsOnce(t *testing.T) {
	queue := subQueue(t)
	pub, err := rabbitmq.New(context.Background(), rabbitmq.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	projectortest.RunForwarded(t, projectortest.ForwardedConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber {
			s, err := rabbitmq.NewSubscriber(context.Background(), rabbitmq.SubscriberConfig{Queue: queue})
			if err != nil {
				tb.Fatal(err)
			}
			return s
		},
		Publisher: pub, Destination: queue, HeaderPrefix: rabbitmq.HeaderPrefix,
	})
}

// TestSubscriberReadsExactSpelling: messages from another producer that
// carry cloudEvents_id and cloudEvents_type twice, exactly and in another
// case, are read by the exact spelling, each projected once.
func TestSubscriberReadsExactSpelling(t *testing.T) {
	queue := subQueue(t)
	conn, err := amqp.Dial(rabbitmq.DefaultURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	projectortest.RunRawColliding(t, projectortest.RawConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber {
			s, err := rabbitmq.NewSubscriber(context.Background(), rabbitmq.SubscriberConfig{Queue: queue})
			if err != nil {
				tb.Fatal(err)
			}
			return s
		},
		Publish: func(tb testing.TB, msgs []projectortest.RawMessage) {
			for _, m := range msgs {
				h := amqp.Table{}
				for k, v := range m.Headers {
					h[k] = v
				}
				// No message-id: the subscriber must take the id from the headers.
				err := ch.PublishWithContext(context.Background(), "", queue, false, false, amqp.Publishing{Headers: h, Body: m.Body})
				if err != nil {
					tb.Fatalf("publish: %v", err)
				}
			}
		},
		HeaderPrefix: rabbitmq.HeaderPrefix,
	})
}
