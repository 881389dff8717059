package pubsub

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector/projectortest"
)

// subscription is a test's subscription on a topic of the server at Addr.
type subscription struct {
	Addr, Topic, Subscription string
	AckDeadline               time.Duration
	Unordered                 bool
}

// testStreams: pstest hands each stream about one message per 10ms.
const testStreams = 16

func newSubscription(t *testing.T, addr string) subscription {
	s := subscription{Addr: addr, Topic: testenv.Name("herald-sub"), Subscription: testenv.Name("herald-sub"), AckDeadline: 10 * time.Second}
	topicWithReader(t, admin(t, addr), s.Topic)
	return s
}

func (s subscription) config() SubscriberConfig {
	return SubscriberConfig{Conn: Config{Project: testProject, EmulatorHost: s.Addr},
		Subscription: s.Subscription, Topic: s.Topic, AckDeadline: s.AckDeadline, Unordered: s.Unordered,
		Streams: testStreams}
}

func (s subscription) open(tb testing.TB) broker.Subscriber {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := NewSubscriber(ctx, s.config())
	if err != nil {
		tb.Fatal(err)
	}
	return sub
}

// openCrashChild opens the subscriber a crash child's job describes.
func openCrashChild(desc json.RawMessage, _ projectortest.Store) (broker.Subscriber, error) {
	var s subscription
	if err := json.Unmarshal(desc, &s); err != nil {
		return nil, err
	}
	return NewSubscriber(context.Background(), s.config())
}

// TestSubscriberProjects10k projects 10,000 events from one subscription,
// shared by two projector processes, into a counting read model. The
// subscription is unordered: pstest hands out one message per ordering
// key until it is acked (TestSubscriberKeyOrder covers ordering).
func TestSubscriberProjects10k(t *testing.T) {
	srv := fake(t)
	s := newSubscription(t, srv.Addr)
	s.Unordered = true
	pub := newPublisher(t, Config{EmulatorHost: srv.Addr})
	projectortest.RunSource(t, projectortest.SourceConfig{
		// pstest runs in this process: under the race detector it takes
		// minutes on a loaded 2-core machine.
		Within:    5 * time.Minute,
		Subscribe: s.open,
		Publish:   func(tb testing.TB, evs []herald.Event) { brokertest.MustPublish(tb, pub, s.Topic, evs) },
	})
}

// TestSubscriberKeyOrder: one process on an ordered subscription applies
// each ordering key's events in publish order.
func TestSubscriberKeyOrder(t *testing.T) {
	srv := fake(t)
	s := newSubscription(t, srv.Addr)
	pub := newPublisher(t, Config{EmulatorHost: srv.Addr})
	projectortest.RunSource(t, projectortest.SourceConfig{
		Events: 1000, Keys: 20, Processes: 1, KeyOrder: true, Within: 5 * time.Minute,
		Subscribe: s.open,
		Publish:   func(tb testing.TB, evs []herald.Event) { brokertest.MustPublish(tb, pub, s.Topic, evs) },
	})
}

// TestSubscriberKilledAfterCommitBeforeAck: Pub/Sub redelivers the message
// a killed process committed but never acked once its ack deadline
// passes; it is applied zero more times.
func TestSubscriberKilledAfterCommitBeforeAck(t *testing.T) {
	srv := fake(t)
	s := newSubscription(t, srv.Addr)
	if err := s.open(t).Close(); err != nil { // creates the subscription
		t.Fatal(err)
	}
	pub := newPublisher(t, Config{EmulatorHost: srv.Addr})
	projectortest.RunKilledBeforeAck(t, projectortest.KilledConfig{
		Publish:   func(tb testing.TB, evs []herald.Event) { brokertest.MustPublish(tb, pub, s.Topic, evs) },
		Child:     s,
		Subscribe: func(tb testing.TB, _ projectortest.Store) broker.Subscriber { return s.open(tb) },
		Within:    time.Minute,
	})
}

// TestSubscriberForwardedEventsOnce: rows that copied an incoming
// CloudEvent's ce-id and ce-type (varied case), enqueued by plain SQL and
// relayed, are each projected once under their own id.
func TestSubscriberForwardedEventsOnce(t *testing.T) {
	srv := fake(t)
	s := newSubscription(t, srv.Addr)
	pub := newPublisher(t, Config{EmulatorHost: srv.Addr})
	projectortest.RunForwarded(t, projectortest.ForwardedConfig{
		Subscribe: s.open, Publisher: pub, Destination: s.Topic, HeaderPrefix: HeaderPrefix,
	})
}

// TestSubscriberReadsExactSpelling: messages from another producer whose
// attributes name the id and type twice, exactly and in another case, are
// read by the exact spelling, each projected once.
func TestSubscriberReadsExactSpelling(t *testing.T) {
	srv := fake(t)
	s := newSubscription(t, srv.Addr)
	projectortest.RunRawColliding(t, projectortest.RawConfig{
		Subscribe: s.open,
		Publish: func(tb testing.TB, msgs []projectortest.RawMessage) {
			for _, m := range msgs {
				srv.Publish(Config{Project: testProject}.fullName("topics", s.Topic), m.Body, m.Headers)
			}
		},
		HeaderPrefix: HeaderPrefix,
	})
}
