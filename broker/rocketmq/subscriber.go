package rocketmq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// SubscriberConfig configures a Subscriber: one member of a clustering
// consumer group on one topic.
type SubscriberConfig struct {
	// NameServers are the name servers (host:port). Required.
	NameServers []string
	// Group is the consumer group: every process of one projection uses
	// the same one and the group splits the topic's queues among them.
	// Required.
	Group string
	// Topic is the topic consumed. Required.
	Topic string
	// Tags, when set, keep only messages with one of these tags (the
	// broker filters); empty takes every message ("*").
	Tags []string
	// Body says what the message body holds, as Config.Body: BodyRaw
	// (the payload) or BodyEnvelope (the payload is unwrapped). Defaults
	// to BodyRaw.
	Body string
	// Namespace, AccessKey and SecretKey are as in Config.
	Namespace string
	AccessKey string
	SecretKey string
	// PullBatch is how many messages one pull takes from a queue.
	// Defaults to 32.
	PullBatch int
	// LogLevel is the client's process-wide log level, as Config.LogLevel.
	// Defaults to warn.
	LogLevel string
}

// DefaultPullBatch is SubscriberConfig.PullBatch's default.
const DefaultPullBatch = 32

// pollWait bounds one wait for a pulled batch, so Close and a cancelled
// Receive are noticed between waits.
const pollWait = time.Second

// Subscriber is a broker.Subscriber on a RocketMQ clustering consumer
// group, through the official client's pull consumer: the client
// rebalances the topic's queues among the group's members and pulls each
// queue in batches; a new group starts at the first offset.
//
// RocketMQ keeps one consumer offset per queue. The client advances it
// past a pulled batch only when the batch is acknowledged, and then only
// to the lowest offset still unacknowledged in that queue; the Subscriber
// acknowledges a batch once every message of it was acked, that is after
// the projector committed each one. The client persists the offsets to the
// broker every five seconds and on Close. After a crash the group resumes
// from the last persisted offset, and the messages after it that were
// applied already are answered "done" by the projection table.
//
// A nacked message is handed out again by this Subscriber's next Receive
// (its batch stays unacknowledged until then), unless its queue has moved
// to another member, which reads it again from the persisted offset. A
// queue is owned by one member at a time and the publisher puts one
// partition key on one queue, so one key's messages are applied in order.
type Subscriber struct {
	cfg SubscriberConfig
	pc  rmq.PullConsumer

	started time.Time // when pc started (startSettle)

	mu     sync.Mutex
	ready  []delivery // pulled or handed back, not yet handed out
	closed bool
}

// startSettle is how long after Start a Close waits before shutting the
// client down. The client's Start launches a rebalance in a goroutine it
// does not track (it fetches each queue's offset, the retry topic's too,
// through client state that Shutdown writes): a Close right after Start
// raced with it (the race detector caught it in the crash test, which
// closes a subscriber within half a second). A subscriber lives far
// longer than this in use; only such quick closes wait.
const startSettle = 2 * time.Second

// delivery is one message and the pulled batch it belongs to.
type delivery struct {
	ev    herald.Event
	batch *batch
}

// batch is one pulled ConsumeRequest: acknowledged to the client once
// every one of its messages is acked.
type batch struct {
	cr   *consumer.ConsumeRequest
	left int // messages not yet acked; guarded by Subscriber.mu
}

var (
	_ broker.Subscriber = (*Subscriber)(nil)
)

// NewSubscriber joins the consumer group and starts pulling.
func NewSubscriber(_ context.Context, cfg SubscriberConfig) (*Subscriber, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rlog.SetLogLevel(cfg.LogLevel)
	opts := []consumer.Option{
		consumer.WithNameServer(cfg.NameServers),
		consumer.WithGroupName(cfg.Group),
		// A distinct instance keeps two subscribers of one group in one
		// process apart: the client registers a group once per instance.
		consumer.WithInstance("herald-" + herald.NewID()),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithPullBatchSize(int32(cfg.PullBatch)),
	}
	if cfg.Namespace != "" {
		opts = append(opts, consumer.WithNamespace(cfg.Namespace))
	}
	if cfg.AccessKey != "" {
		opts = append(opts, consumer.WithCredentials(primitive.Credentials{AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey}))
	}
	pc, err := rmq.NewPullConsumer(opts...)
	if err != nil {
		return nil, fmt.Errorf("rocketmq: subscriber: %w", err)
	}
	sel := consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}
	if len(cfg.Tags) > 0 {
		sel.Expression = strings.Join(cfg.Tags, " || ")
	}
	if err := pc.Subscribe(cfg.Topic, sel); err != nil {
		_ = pc.Shutdown()
		return nil, fmt.Errorf("rocketmq: subscriber: subscribe %s: %w", cfg.Topic, err)
	}
	if err := pc.Start(); err != nil {
		// Start shuts the consumer down itself when the route is missing.
		_ = pc.Shutdown()
		return nil, fmt.Errorf("rocketmq: subscriber: start: %w", err)
	}
	return &Subscriber{cfg: cfg, pc: pc, started: time.Now()}, nil
}

// withDefaults fills zero fields and checks the result, naming the field
// at fault.
func (c SubscriberConfig) withDefaults() (SubscriberConfig, error) {
	if c.Body == "" {
		c.Body = BodyRaw
	}
	if c.PullBatch == 0 {
		c.PullBatch = DefaultPullBatch
	}
	if c.LogLevel == "" {
		c.LogLevel = DefaultLogLevel
	}
	switch {
	case len(c.NameServers) == 0:
		return c, errors.New("rocketmq: subscriber: NameServers: at least one host:port is required")
	case c.Group == "" || c.Topic == "":
		return c, errors.New("rocketmq: subscriber: Group and Topic are required")
	case c.Body != BodyRaw && c.Body != BodyEnvelope:
		return c, fmt.Errorf("rocketmq: subscriber: Body: want %q or %q, got %q", BodyRaw, BodyEnvelope, c.Body)
	case c.PullBatch < 0 || c.PullBatch > 1024:
		return c, fmt.Errorf("rocketmq: subscriber: PullBatch: want 1 to 1024, got %d", c.PullBatch)
	case (c.AccessKey == "") != (c.SecretKey == ""):
		return c, errors.New("rocketmq: subscriber: AccessKey and SecretKey: set both or neither")
	}
	for i, tag := range c.Tags {
		if err := checkTag(tag); err != nil || tag == "" {
			return c, fmt.Errorf("rocketmq: subscriber: Tags[%d]: %q cannot be filtered on", i, tag)
		}
	}
	return c, nil
}

// Receive returns up to most messages, waiting until some arrive or ctx
// ends.
func (s *Subscriber) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	most = max(most, 1)
	for {
		if out, err := s.take(most); len(out) > 0 || err != nil {
			return out, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cr, err := s.pc.Poll(ctx, pollWait)
		if consumer.IsNoNewMsgError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("rocketmq: poll %s: %w", s.cfg.Topic, err)
		}
		n := s.add(cr)
		// Batches already pulled from other queues join this answer.
		for n < most {
			cr, err := s.pc.Poll(ctx, time.Millisecond)
			if err != nil {
				break
			}
			n = s.add(cr)
		}
	}
}

// add queues a pulled batch's messages and returns how many are ready.
func (s *Subscriber) add(cr *consumer.ConsumeRequest) int {
	msgs := cr.GetMsgList()
	b := &batch{cr: cr, left: len(msgs)}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		s.ready = append(s.ready, delivery{ev: messageEvent(s.cfg.Body, m), batch: b})
	}
	return len(s.ready)
}

// take hands out up to most ready messages, passing over those whose queue
// moved to another member (it reads them from the persisted offset).
func (s *Subscriber) take(most int) ([]broker.Received, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("rocketmq: subscriber is closed")
	}
	var out []broker.Received
	for len(s.ready) > 0 && len(out) < most {
		d := s.ready[0]
		s.ready = s.ready[1:]
		if d.batch.cr.GetPQ().IsDroppd() {
			continue
		}
		out = append(out, broker.Received{Event: d.ev,
			Ack:  func(context.Context) error { s.ack(d.batch); return nil },
			Nack: func(context.Context) error { s.handBack(d); return nil }})
	}
	return out, nil
}

// ack settles one message of b and acknowledges b to the client when it
// was the last: the client then moves the queue's offset past b (up to
// its lowest message still unacknowledged).
func (s *Subscriber) ack(b *batch) {
	s.mu.Lock()
	b.left--
	done := b.left == 0
	s.mu.Unlock()
	if done {
		s.pc.ACK(context.Background(), b.cr, consumer.ConsumeSuccess)
	}
}

// handBack puts a nacked message first in line for the next Receive.
func (s *Subscriber) handBack(d delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.ready = append([]delivery{d}, s.ready...)
	}
}

// Close stops pulling and persists the acknowledged offsets; unsettled
// messages are read again by the group from there.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.ready = nil
	s.mu.Unlock()
	time.Sleep(time.Until(s.started.Add(startSettle))) // see startSettle
	if err := s.pc.Shutdown(); err != nil {
		return fmt.Errorf("rocketmq: subscriber: shutdown: %w", err)
	}
	return nil
}

// messageEvent decodes a message per the message contract (RocketMQ
// binding: CE_ properties); RocketMQ's own properties are not user
// headers. A message without CE_id gets its position as id, stable across
// redeliveries, and the sharding key stands in for a missing CE_subject.
// In envelope mode the payload is unwrapped and the envelope fills the
// attributes the properties lack.
func messageEvent(body string, m *primitive.MessageExt) herald.Event {
	props := m.GetProperties()
	h := make(map[string]string, len(props))
	for k, v := range props {
		if !reserved[k] {
			h[k] = v
		}
	}
	if ct, ok := h[contentTypeProperty]; ok {
		delete(h, contentTypeProperty)
		h["content-type"] = ct
	}
	ev := broker.EventFromHeaders(h, HeaderPrefix, m.Body)
	if body == BodyEnvelope {
		unwrap(&ev)
	}
	if ev.ID == "" {
		ev.ID = fmt.Sprintf("rocketmq:%s:%s:%d:%d", m.Topic, m.Queue.BrokerName, m.Queue.QueueId, m.QueueOffset)
	}
	if ev.PartitionKey == "" {
		ev.PartitionKey = m.GetShardingKey()
	}
	return ev
}

// unwrap replaces an Envelope body by its payload; a body that is not an
// envelope stays the payload.
func unwrap(ev *herald.Event) {
	var env Envelope
	if json.Unmarshal(ev.Payload, &env) != nil || env.Payload == nil {
		return
	}
	ev.Payload = env.Payload
	ev.ID = orElse(ev.ID, env.EventID)
	ev.Type = orElse(ev.Type, env.EventType)
	ev.Tenant = orElse(ev.Tenant, env.Tenant)
	if t, err := time.Parse(time.RFC3339Nano, env.OccurredAt); err == nil && ev.CreatedAt.IsZero() {
		ev.CreatedAt = t
	}
}

// orElse returns a unless it is empty, else b.
func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
