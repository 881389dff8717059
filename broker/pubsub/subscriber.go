package pubsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// SubscriberConfig configures a Subscriber.
type SubscriberConfig struct {
	// Conn is the project and how to reach it, as for the publisher.
	Conn Config
	// Subscription is the subscription id (or full name). Every process
	// of one projection uses the same one: Pub/Sub spreads its messages.
	// Required.
	Subscription string
	// Topic, when set, creates the subscription on this topic if it does
	// not exist, with message ordering enabled (unless Unordered) and
	// AckDeadline.
	Topic string
	// Unordered creates the subscription without message ordering: Pub/Sub
	// then need not hold a key's next message until the last one is acked.
	Unordered bool
	// AckDeadline is how long Pub/Sub waits for an ack before it
	// redelivers when the client stops extending it (a process that
	// died): a created subscription's ack deadline, and the longest
	// extension the client asks for at a time (10s to 600s). Defaults to
	// 30s.
	AckDeadline time.Duration
	// MaxOutstanding bounds the messages received and not yet acked by
	// this process. Defaults to 1000.
	MaxOutstanding int
	// MaxExtension is how long the client keeps extending a message's ack
	// deadline while the projector holds it. Defaults to 10m.
	MaxExtension time.Duration
	// Streams is how many streaming pulls the process opens. Defaults to
	// 1, which carries thousands of messages a second from Pub/Sub; an
	// emulator or pstest hands each stream about one message per 10ms.
	Streams int
}

func (c SubscriberConfig) withDefaults() SubscriberConfig {
	c.Conn = c.Conn.WithDefaults()
	if c.AckDeadline <= 0 {
		c.AckDeadline = 30 * time.Second
	}
	if c.MaxOutstanding <= 0 {
		c.MaxOutstanding = 1000
	}
	if c.MaxExtension <= 0 {
		c.MaxExtension = 10 * time.Minute
	}
	return c
}

// Subscriber is a broker.Subscriber on a Pub/Sub subscription, through
// the client's streaming pull: it extends the ack deadline of the
// messages the projector holds (up to MaxExtension), and on a
// subscription with message ordering hands out one ordering key's
// messages in order. Ack acks; Nack makes Pub/Sub redeliver at once.
// Messages of a process that died are redelivered once their ack
// deadline passes. There is no Rewind (a seek replays acked messages
// only on a subscription that retains them): a rebuild reads the outbox.
type Subscriber struct {
	cfg    SubscriberConfig
	client *pubsub.Client
	sub    *pubsub.Subscriber

	mu      sync.Mutex
	queue   []*pubsub.Message
	recvErr error // why the streaming pull stopped, until Receive reports it
	running bool
	wake    chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
}

var _ broker.Subscriber = (*Subscriber)(nil)

// NewSubscriber makes the client, creates the subscription if asked and
// starts pulling.
func NewSubscriber(ctx context.Context, cfg SubscriberConfig) (*Subscriber, error) {
	cfg = cfg.withDefaults()
	if cfg.Subscription == "" {
		return nil, errors.New("pubsub: subscriber: Subscription is required")
	}
	if err := cfg.Conn.Validate(); err != nil {
		return nil, err
	}
	client, err := newClient(ctx, cfg.Conn)
	if err != nil {
		return nil, err
	}
	s := &Subscriber{cfg: cfg, client: client, wake: make(chan struct{}, 1)}
	if cfg.Topic != "" {
		if err := s.ensure(ctx); err != nil {
			client.Close()
			return nil, err
		}
	}
	s.sub = client.Subscriber(cfg.Subscription)
	s.sub.ReceiveSettings.MaxOutstandingMessages = cfg.MaxOutstanding
	s.sub.ReceiveSettings.MaxExtension = cfg.MaxExtension
	s.sub.ReceiveSettings.NumGoroutines = max(cfg.Streams, 1)
	s.sub.ReceiveSettings.MaxDurationPerAckExtension = min(max(cfg.AckDeadline, 10*time.Second), 600*time.Second)
	s.start()
	return s, nil
}

// fullName is a resource's full name: kind ("topics") of the project.
func (c Config) fullName(kind, idOrName string) string {
	if len(idOrName) > len("projects/") && idOrName[:len("projects/")] == "projects/" {
		return idOrName
	}
	return "projects/" + c.Project + "/" + kind + "/" + idOrName
}

// ensure creates the subscription on Topic unless it exists.
func (s *Subscriber) ensure(ctx context.Context) error {
	_, err := s.client.SubscriptionAdminClient.CreateSubscription(ctx, &pb.Subscription{
		Name:                  s.cfg.Conn.fullName("subscriptions", s.cfg.Subscription),
		Topic:                 s.cfg.Conn.fullName("topics", s.cfg.Topic),
		AckDeadlineSeconds:    int32(s.cfg.AckDeadline / time.Second),
		EnableMessageOrdering: !s.cfg.Unordered,
	})
	if err != nil && status.Code(err) != codes.AlreadyExists {
		return fmt.Errorf("pubsub: create subscription %s on topic %s: %w", s.cfg.Subscription, s.cfg.Topic, err)
	}
	return nil
}

// start runs the streaming pull in the background: each message goes to
// the queue (the callback returns at once; the client keeps its deadline
// extended until it is acked or nacked).
func (s *Subscriber) start() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.mu.Lock()
	s.running, s.cancel, s.done = true, cancel, done
	s.mu.Unlock()
	go func() {
		defer close(done)
		err := s.sub.Receive(ctx, func(_ context.Context, m *pubsub.Message) {
			s.mu.Lock()
			s.queue = append(s.queue, m)
			s.mu.Unlock()
			s.signal()
		})
		s.mu.Lock()
		s.running = false
		if ctx.Err() == nil {
			if err == nil {
				err = errors.New("the streaming pull ended")
			}
			s.recvErr = err
		}
		s.mu.Unlock()
		s.signal()
	}()
}

func (s *Subscriber) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Receive waits for a message or ctx's end, then takes up to most queued
// messages. When the streaming pull stopped (the subscription is gone,
// Pub/Sub refused it) it reports why once and starts it again.
func (s *Subscriber) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	for {
		out, err := s.next(most)
		if err != nil || len(out) > 0 {
			return out, err
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// next takes up to most queued messages, or the pull's error.
func (s *Subscriber) next(most int) ([]broker.Received, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recvErr != nil {
		err := s.recvErr
		s.recvErr = nil
		go s.restart()
		return nil, fmt.Errorf("pubsub: subscription %s: %w", s.cfg.Subscription, err)
	}
	n := min(most, len(s.queue))
	out := make([]broker.Received, n)
	for i, m := range s.queue[:n] {
		out[i] = received(m)
	}
	s.queue = s.queue[n:]
	return out, nil
}

// restart starts the streaming pull again once the last one has ended.
func (s *Subscriber) restart() {
	s.mu.Lock()
	done, cancelled := s.done, s.cancel == nil
	s.mu.Unlock()
	if cancelled {
		return
	}
	<-done
	s.mu.Lock()
	closed := s.cancel == nil
	s.mu.Unlock()
	if !closed {
		s.start()
	}
}

func received(m *pubsub.Message) broker.Received {
	return broker.Received{
		Event: MessageEvent(m),
		Ack:   func(context.Context) error { m.Ack(); return nil },
		Nack:  func(context.Context) error { m.Nack(); return nil },
	}
}

// MessageEvent decodes a message per the message contract; a message
// without ce-id gets its Pub/Sub message id, which redeliveries keep.
func MessageEvent(m *pubsub.Message) herald.Event {
	ev := broker.EventFromHeaders(m.Attributes, HeaderPrefix, m.Data)
	if ev.ID == "" {
		ev.ID = "pubsub:" + m.ID
	}
	if ev.PartitionKey == "" {
		ev.PartitionKey = m.OrderingKey
	}
	return ev
}

// Close stops pulling and closes the client; messages not acked are
// redelivered once their ack deadline passes.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel = nil
	s.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-done
	return s.client.Close()
}
