package nats

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	// FetchWait is the longest one Receive waits in one pull request.
	// Defaults to 500ms.
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
	if c.FetchWait <= 0 {
		c.FetchWait = 500 * time.Millisecond
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

// Receive pulls up to most messages, waiting for the first one until ctx
// ends (in pull requests of at most FetchWait).
func (s *Subscriber) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	for {
		wait := s.cfg.FetchWait
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch, err := s.con.Fetch(most, jetstream.FetchMaxWait(max(wait, time.Millisecond)))
		if err != nil {
			return nil, fmt.Errorf("nats: fetch from %s: %w", s.cfg.Durable, err)
		}
		var out []broker.Received
		for m := range batch.Messages() {
			out = append(out, s.received(m))
		}
		if len(out) > 0 {
			return out, nil
		}
		if err := batch.Error(); err != nil && !errors.Is(err, natsgo.ErrTimeout) {
			return nil, fmt.Errorf("nats: fetch from %s: %w", s.cfg.Durable, err)
		}
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
	if err := s.js.DeleteConsumer(ctx, s.cfg.Stream, s.cfg.Durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("nats: rewind %s: %w", s.cfg.Durable, err)
	}
	return s.ensureConsumer(ctx)
}

// Close closes the connection; messages not acked are redelivered by the
// server after AckWait.
func (s *Subscriber) Close() error {
	s.nc.Close()
	return nil
}
