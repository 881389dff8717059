package nats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// SubscriberConfig configures a Subscriber: a durable pull consumer on a
// JetStream stream. The connection settings mean what they mean in Config.
type SubscriberConfig struct {
	// URL, CredsFile, Token, CAFile, CertFile, KeyFile: as in Config.
	URL                       string
	CredsFile, Token          string
	CAFile, CertFile, KeyFile string
	// Stream is the stream to consume. Defaults to "HERALD".
	Stream string
	// Durable is the consumer's name: every process of one projection uses
	// the same one and they share its messages. Required.
	Durable string
	// FilterSubjects limits the consumer to these subjects (all if empty).
	// Several subjects need nats-server 2.10 or later; a single one works
	// with older servers too.
	FilterSubjects []string
	// AckWait is how long the server waits for an ack before redelivering.
	// It must cover an event's apply, retries included. Defaults to 1m.
	AckWait time.Duration
	// MaxAckPending bounds the messages handed out and not yet acked, over
	// all processes. Defaults to 2048.
	MaxAckPending int
	// FetchWait is ignored: Receive pulls continuously (the client keeps
	// pull requests open), so no wait bounds a request any more.
	//
	// Deprecated: Receive hands over each message as it arrives.
	FetchWait time.Duration
	// Name is the connection's name. Defaults to "herald-projector".
	Name string
}

func (c SubscriberConfig) withDefaults() SubscriberConfig {
	if c.URL == "" {
		c.URL = "nats://127.0.0.1:4222"
	}
	if c.Stream == "" {
		c.Stream = "HERALD"
	}
	if c.AckWait <= 0 {
		c.AckWait = time.Minute
	}
	if c.MaxAckPending <= 0 {
		c.MaxAckPending = 2048
	}
	if c.Name == "" {
		c.Name = "herald-projector"
	}
	return c
}

// Subscriber is a broker.Subscriber on a JetStream durable pull consumer
// with explicit acks. JetStream redelivers a message not acked within
// AckWait, or nacked; Rewind starts the consumer over from the stream's
// first message. Several processes on one Durable share its messages (no
// per-key order across them; one process keeps a key's order).
type Subscriber struct {
	cfg SubscriberConfig
	nc  *natsgo.Conn
	js  jetstream.JetStream
	con jetstream.Consumer

	mu   sync.Mutex
	pull *pull // started by the first Receive; nil after an error or Rewind
}

var (
	_ broker.Subscriber = (*Subscriber)(nil)
	_ broker.Rewinder   = (*Subscriber)(nil)
)

// NewSubscriber connects and creates (or updates) the durable consumer.
func NewSubscriber(ctx context.Context, cfg SubscriberConfig) (*Subscriber, error) {
	cfg = cfg.withDefaults()
	if cfg.Durable == "" {
		return nil, errors.New("nats: subscriber: Durable is empty")
	}
	conn := Config{URL: cfg.URL, CredsFile: cfg.CredsFile, Token: cfg.Token, CAFile: cfg.CAFile,
		CertFile: cfg.CertFile, KeyFile: cfg.KeyFile, Name: cfg.Name}.WithDefaults()
	nc, err := natsgo.Connect(conn.URL, connectOptions(conn)...)
	if err != nil {
		return nil, fmt.Errorf("nats: connect to %s: %w", redact(cfg.URL), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats: jetstream: %w", err)
	}
	s := &Subscriber{cfg: cfg, nc: nc, js: js}
	if err := s.ensureConsumer(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return s, nil
}

func (s *Subscriber) ensureConsumer(ctx context.Context) error {
	cc := jetstream.ConsumerConfig{
		Durable:       s.cfg.Durable,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.cfg.AckWait,
		MaxAckPending: s.cfg.MaxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	// One subject goes in the single-subject field, which servers before
	// 2.10 (no multi-subject filters) understand too.
	if len(s.cfg.FilterSubjects) == 1 {
		cc.FilterSubject = s.cfg.FilterSubjects[0]
	} else {
		cc.FilterSubjects = s.cfg.FilterSubjects
	}
	con, err := s.js.CreateOrUpdateConsumer(ctx, s.cfg.Stream, cc)
	if err != nil {
		return fmt.Errorf("nats: consumer %s on stream %s: %w", s.cfg.Durable, s.cfg.Stream, err)
	}
	s.con = con
	return nil
}

// Receive returns up to most messages: it waits for the first until ctx
// ends, then takes those already pulled.
func (s *Subscriber) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := s.puller()
	if err != nil {
		return nil, fmt.Errorf("nats: pull from %s: %w", s.cfg.Durable, err)
	}
	msgs, err := p.receive(ctx, most)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The pull stopped (a deleted consumer, a closed connection): the
		// next Receive starts another.
		s.dropPull(p)
		return nil, fmt.Errorf("nats: pull from %s: %w", s.cfg.Durable, err)
	}
	out := make([]broker.Received, len(msgs))
	for i, m := range msgs {
		out[i] = s.received(m)
	}
	return out, nil
}

// puller returns the running pull, starting one if there is none.
func (s *Subscriber) puller() (*pull, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pull == nil {
		p, err := startPull(s.con)
		if err != nil {
			return nil, err
		}
		s.pull = p
	}
	return s.pull, nil
}

// dropPull stops p if it is still the running pull (so that each pull is
// stopped once); with a nil p it stops whatever runs.
func (s *Subscriber) dropPull(p *pull) {
	s.mu.Lock()
	if p == nil {
		p = s.pull
	}
	mine := p != nil && s.pull == p
	if mine {
		s.pull = nil
	}
	s.mu.Unlock()
	if mine {
		p.stop()
	}
}

// received decodes one message (eventOf) with its settlement.
func (s *Subscriber) received(m jetstream.Msg) broker.Received {
	return broker.Received{
		Event: eventOf(m),
		Ack:   func(context.Context) error { return m.Ack() },
		Nack:  func(context.Context) error { return m.Nak() },
	}
}

// eventOf decodes one message per the message contract. A message without
// ce-id gets its stream position as id, which is stable across
// redeliveries.
func eventOf(m jetstream.Msg) herald.Event {
	h := make(map[string]string, len(m.Headers()))
	for k, vs := range m.Headers() {
		// Nats-* headers are the server's (Nats-Msg-Id, ...), in any case.
		if len(vs) > 0 && !strings.HasPrefix(strings.ToLower(k), "nats-") {
			h[k] = vs[0]
		}
	}
	ev := broker.EventFromHeaders(h, "ce-", m.Data())
	if ev.ID == "" {
		if md, err := m.Metadata(); err == nil {
			ev.ID = fmt.Sprintf("nats:%s:%d", md.Stream, md.Sequence.Stream)
		}
	}
	return ev
}

// Rewind deletes the durable consumer and creates it again from the first
// message of the stream. Stop every other process on the Durable first.
func (s *Subscriber) Rewind(ctx context.Context) error {
	s.dropPull(nil)
	if err := s.js.DeleteConsumer(ctx, s.cfg.Stream, s.cfg.Durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("nats: rewind %s: %w", s.cfg.Durable, err)
	}
	return s.ensureConsumer(ctx)
}

// Close closes the connection; messages not acked are redelivered by the
// server after AckWait.
func (s *Subscriber) Close() error {
	s.dropPull(nil)
	s.nc.Close()
	return nil
}
