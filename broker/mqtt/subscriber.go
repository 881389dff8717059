package mqtt

import (
	"context"
	"errors"
	"fmt"
	"sync"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// SubscriberConfig configures a Subscriber.
type SubscriberConfig struct {
	// Conn is the server and credentials, as for the publisher (its
	// ClientID, Retain and Body are not used).
	Conn Config
	// ClientID names the persistent session: the same id after a restart
	// gets back the messages the server holds for it (unacknowledged, or
	// published while it was away). It must be stable per process and
	// unique: a second client on it cuts the first off. Required.
	ClientID string
	// Topic is the topic filter to subscribe to (+ and # allowed). Required.
	Topic string
	// Group, when set, makes the subscription shared ($share/Group/Topic):
	// the server spreads the messages over every client of the group.
	// Without it each client gets every message.
	Group string
}

// Subscriber is a broker.Subscriber on an MQTT persistent session
// (clean session off) with a QoS 1 subscription and manual PUBACKs: Ack
// sends the PUBACK. The server keeps what the session has not acked and
// sends it again when the same client id reconnects; it also keeps
// messages published while the client is away, up to its queue limit
// (mosquitto's max_queued_messages, 1000 by default, beyond which it
// drops them). MQTT has no negative acknowledgement: Nack hands the
// message to the next Receive of this subscriber. Per topic the server
// delivers in publish order (per key when the lane's destination keeps a
// key on one topic). MQTT has no rewind.
type Subscriber struct {
	cfg SubscriberConfig

	mu     sync.Mutex
	client paho.Client
	gen    int // connection generation; a message from an older one is stale
	queue  []*delivery
	// unacked are the connection's deliveries in the order they came,
	// up to the first one not acked yet: MQTT wants the PUBACKs in that
	// order (mosquitto sends a session's messages out of order otherwise).
	unacked []*delivery
	wake    chan struct{} // a message came or the connection dropped
	closed  bool
	// ackMu serialises sending PUBACKs, so that they leave in order.
	ackMu sync.Mutex
}

// delivery is one message taken from the server on connection gen.
type delivery struct {
	gen   int
	msg   paho.Message
	acked bool
}

var _ broker.Subscriber = (*Subscriber)(nil)

// NewSubscriber connects, resuming the session of cfg.ClientID, and
// subscribes.
func NewSubscriber(ctx context.Context, cfg SubscriberConfig) (*Subscriber, error) {
	cfg.Conn = cfg.Conn.WithDefaults()
	switch {
	case cfg.ClientID == "":
		return nil, errors.New("mqtt: subscriber: ClientID is required (the persistent session's name)")
	case cfg.Topic == "":
		return nil, errors.New("mqtt: subscriber: Topic is required")
	}
	if err := cfg.Conn.Validate(); err != nil {
		return nil, err
	}
	s := &Subscriber{cfg: cfg, wake: make(chan struct{}, 1)}
	if err := s.connect(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// filter is the subscription's topic filter, shared if Group is set.
func (s *Subscriber) filter() string {
	if s.cfg.Group != "" {
		return "$share/" + s.cfg.Group + "/" + s.cfg.Topic
	}
	return s.cfg.Topic
}

// connect dials the session and subscribes; messages the server resends
// before the subscription is confirmed reach the default handler.
func (s *Subscriber) connect(ctx context.Context) error {
	s.mu.Lock()
	if s.client != nil {
		s.client.Disconnect(0) // lost already; release what is left of it
		s.client = nil
	}
	s.gen++
	gen := s.gen
	// Their PUBACKs would go nowhere: the server sends them again.
	s.queue, s.unacked = nil, nil
	s.mu.Unlock()
	handler := func(_ paho.Client, m paho.Message) { s.take(gen, m) }
	c, err := dial(ctx, s.cfg.Conn, s.cfg.ClientID, func(o *paho.ClientOptions) {
		o.SetCleanSession(false).SetAutoAckDisabled(true).SetDefaultPublishHandler(handler).
			SetConnectionLostHandler(func(paho.Client, error) { s.signal() })
	})
	if err != nil {
		return fmt.Errorf("mqtt: subscriber %s: %w", s.cfg.ClientID, err)
	}
	tok := c.Subscribe(s.filter(), 1, handler)
	<-tok.Done() // bounded by the write and keep-alive timeouts
	if err := subscribed(tok); err != nil {
		c.Disconnect(100)
		return fmt.Errorf("mqtt: subscriber %s: subscribe %s: %w", s.cfg.ClientID, s.filter(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Disconnect(100)
		return errClosedSubscriber
	}
	s.client = c
	return nil
}

var errClosedSubscriber = errors.New("mqtt: subscriber is closed")

// subscribed is the subscription's error: the token's, or the server's
// refusal (SUBACK return code 0x80).
func subscribed(tok paho.Token) error {
	if err := tok.Error(); err != nil {
		return err
	}
	st, ok := tok.(*paho.SubscribeToken)
	if !ok {
		return nil
	}
	for _, code := range st.Result() {
		if code == 0x80 {
			return errors.New("the server refused the subscription (SUBACK 0x80: not authorized, or shared subscriptions unsupported)")
		}
	}
	return nil
}

// take queues a message; it never blocks the client's reader.
func (s *Subscriber) take(gen int, m paho.Message) {
	d := &delivery{gen: gen, msg: m}
	s.mu.Lock()
	if gen == s.gen {
		s.queue = append(s.queue, d)
		s.unacked = append(s.unacked, d)
	}
	s.mu.Unlock()
	s.signal()
}

func (s *Subscriber) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Receive waits for a message or ctx's end, then takes up to most queued
// messages. A dropped connection is dialed again (the session resumes).
func (s *Subscriber) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	for {
		out, lost, err := s.next(most)
		if err != nil || len(out) > 0 {
			return out, err
		}
		if lost {
			if err := s.connect(ctx); err != nil {
				return nil, err
			}
			continue
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// next takes up to most queued messages, or says the connection is lost.
func (s *Subscriber) next(most int) ([]broker.Received, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, errClosedSubscriber
	}
	n := min(most, len(s.queue))
	if n == 0 {
		return nil, s.client == nil || !s.client.IsConnectionOpen(), nil
	}
	out := make([]broker.Received, n)
	for i, d := range s.queue[:n] {
		out[i] = s.received(d)
	}
	s.queue = s.queue[n:]
	return out, false, nil
}

// received decodes one delivery with its settlement. Ack sends the
// PUBACK once every earlier delivery of the connection is acked (dropped
// if the connection it came on is gone: the server sends the message
// again and the ledger knows it); Nack queues it again at the front.
func (s *Subscriber) received(d *delivery) broker.Received {
	return broker.Received{
		Event: MessageEvent(d.msg.Payload()),
		Ack: func(context.Context) error {
			s.ack(d)
			return nil
		},
		Nack: func(context.Context) error {
			s.mu.Lock()
			if d.gen == s.gen {
				s.queue = append([]*delivery{d}, s.queue...)
			}
			s.mu.Unlock()
			s.signal()
			return nil
		},
	}
}

// ack marks d acked and sends the PUBACKs of the acked deliveries at the
// head of the connection's order.
func (s *Subscriber) ack(d *delivery) {
	s.ackMu.Lock()
	defer s.ackMu.Unlock()
	s.mu.Lock()
	d.acked = true
	n := 0
	if d.gen == s.gen {
		for n < len(s.unacked) && s.unacked[n].acked {
			n++
		}
	}
	ready := s.unacked[:n]
	s.unacked = s.unacked[n:]
	s.mu.Unlock()
	for _, r := range ready {
		r.msg.Ack()
	}
}

// MessageEvent decodes an envelope-mode body per the message contract; a
// body that is no envelope is an event with that payload and no id (a
// projector refuses it).
func MessageEvent(body []byte) herald.Event {
	h, payload, err := Envelope(body)
	if err != nil {
		return herald.Event{Payload: body}
	}
	return broker.EventFromHeaders(h, HeaderPrefix, payload)
}

// Close disconnects; the session and what it has not acked stay on the
// server for the next client with the same id.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.client != nil {
		s.client.Disconnect(100)
		s.client = nil
	}
	return nil
}

// DeleteSession removes the persistent session of clientID from the
// server (connects with a clean session and disconnects), dropping the
// messages it holds: for a projection that is gone for good.
func DeleteSession(ctx context.Context, conn Config, clientID string) error {
	conn = conn.WithDefaults()
	c, err := dial(ctx, conn, clientID, func(o *paho.ClientOptions) { o.SetCleanSession(true) })
	if err != nil {
		return err
	}
	c.Disconnect(100)
	return nil
}
