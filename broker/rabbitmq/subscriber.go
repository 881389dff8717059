package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// SubscriberConfig configures a Subscriber on one queue.
type SubscriberConfig struct {
	// URL is the server, as in Config. Defaults to DefaultURL.
	URL string
	// Queue is the queue to consume. Required. Every process of one
	// projection consumes the same queue; RabbitMQ spreads its messages.
	Queue string
	// Declare declares Queue as a durable queue if it does not exist.
	Declare bool
	// Prefetch is how many unacked messages the broker hands this consumer
	// at most (basic.qos). Defaults to 256.
	Prefetch int
}

// Subscriber is a broker.Subscriber on a RabbitMQ queue with manual acks
// and a prefetch window. Ack is basic.ack; Nack is basic.nack with requeue.
// Messages unacked when the connection drops are requeued by the broker;
// the next Receive reconnects. The event id comes from the cloudEvents_id
// header, or the message-id property. RabbitMQ has no rewind: a rebuild
// reads from the outbox instead.
type Subscriber struct {
	cfg SubscriberConfig

	mu   sync.Mutex
	conn *amqp.Connection
	ch   *amqp.Channel
	in   <-chan amqp.Delivery
}

var _ broker.Subscriber = (*Subscriber)(nil)

// NewSubscriber connects and starts consuming.
func NewSubscriber(_ context.Context, cfg SubscriberConfig) (*Subscriber, error) {
	if cfg.Queue == "" {
		return nil, errors.New("rabbitmq: subscriber: Queue is required")
	}
	if cfg.URL == "" {
		cfg.URL = DefaultURL
	}
	if cfg.Prefetch <= 0 {
		cfg.Prefetch = 256
	}
	s := &Subscriber{cfg: cfg}
	if _, err := s.deliveries(); err != nil {
		return nil, err
	}
	return s, nil
}

// deliveries returns the consumer's delivery channel, connecting first if
// there is no live one.
func (s *Subscriber) deliveries() (<-chan amqp.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil && !s.ch.IsClosed() {
		return s.in, nil
	}
	s.closeLocked()
	conn, err := amqp.DialConfig(s.cfg.URL, amqp.Config{Properties: amqp.Table{"connection_name": "herald-projector"}})
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: subscriber: connect: %w", redactErr(err))
	}
	ch, err := conn.Channel()
	if err == nil && s.cfg.Declare {
		_, err = ch.QueueDeclare(s.cfg.Queue, true, false, false, false, nil)
	}
	if err == nil {
		err = ch.Qos(s.cfg.Prefetch, 0, false)
	}
	var in <-chan amqp.Delivery
	if err == nil {
		in, err = ch.Consume(s.cfg.Queue, "", false, false, false, false, nil)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("rabbitmq: subscriber: consume %s: %w", s.cfg.Queue, err)
	}
	s.conn, s.ch, s.in = conn, ch, in
	return in, nil
}

// Receive waits for a delivery or ctx's end, then takes up to most
// deliveries already buffered (the prefetch window).
func (s *Subscriber) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	in, err := s.deliveries()
	if err != nil {
		return nil, err
	}
	var out []broker.Received
	select {
	case d, ok := <-in:
		if !ok {
			return nil, errors.New("rabbitmq: subscriber: the channel closed; reconnecting")
		}
		out = append(out, s.received(d))
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for len(out) < most {
		select {
		case d, ok := <-in:
			if !ok {
				return out, nil
			}
			out = append(out, s.received(d))
		default:
			return out, nil
		}
	}
	return out, nil
}

func (s *Subscriber) received(d amqp.Delivery) broker.Received {
	return broker.Received{Event: deliveryEvent(d),
		Ack:  func(context.Context) error { return d.Ack(false) },
		Nack: func(context.Context) error { return d.Nack(false, true) }}
}

// deliveryEvent decodes a delivery per the message contract (AMQP binding);
// the message-id and type properties stand in for missing attributes.
func deliveryEvent(d amqp.Delivery) herald.Event {
	h := make(map[string]string, len(d.Headers))
	for k, v := range d.Headers {
		if str, ok := v.(string); ok {
			h[k] = str
		} else {
			h[k] = fmt.Sprint(v)
		}
	}
	ev := broker.EventFromHeaders(h, HeaderPrefix, d.Body)
	if ev.ID == "" {
		ev.ID = d.MessageId
	}
	if ev.Type == "" {
		ev.Type = d.Type
	}
	return ev
}

// Close closes the connection; unacked messages are requeued by the broker.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
	return nil
}

func (s *Subscriber) closeLocked() {
	if s.conn != nil {
		_ = s.conn.Close()
	}
	s.conn, s.ch, s.in = nil, nil, nil
}
