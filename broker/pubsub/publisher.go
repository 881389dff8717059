// Package pubsub publishes events to Google Cloud Pub/Sub (and its
// emulator) and subscribes a projector to a subscription.
//
// # The message
//
// The topic is the message's Destination (the lane's template: a topic id
// of Config.Project, or a full "projects/P/topics/T" name). The data is
// the payload; the CloudEvents attributes are message attributes with the
// Pub/Sub binding's "ce-" prefix (ce-id, ce-type, ce-source, ce-time,
// ce-subject, ce-tenant, ce-topic), beside the user headers (trace context
// included; content-type is the binding's datacontenttype). With
// Config.OrderingKeys (the default) the partition key is the ordering key:
// a subscription with message ordering enabled gets one key's messages in
// publish order. The receipt is the message id Pub/Sub assigned.
//
// # Errors
//
// The client's own retries are off: the relay retries, and its breaker
// pauses the lanes on an outage. UNAVAILABLE and DEADLINE_EXCEEDED (and no
// answer by the batch deadline) are unavailable and ambiguous (the
// message may be stored); RESOURCE_EXHAUSTED (throttling, quota) is
// unavailable: nothing stored, no attempt spent. INVALID_ARGUMENT and a
// message over the limits (payload over Config.MaxPayload, an attribute
// over Pub/Sub's sizes, a name starting with "goog") are permanent.
// NOT_FOUND (no such topic) and PERMISSION_DENIED are retryable: an
// operator fixes them. A message held back because an earlier one of its
// ordering key failed wraps broker.ErrHeldBack. Pub/Sub does not dedupe
// publishes: a message published again after an ambiguous error is
// stored twice, and consumers dedupe by ce-id.
package pubsub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	vkit "cloud.google.com/go/pubsub/v2/apiv1"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/internal/keyed"
)

// HeaderPrefix is the CloudEvents Pub/Sub binding's attribute prefix.
const HeaderPrefix = "ce-"

// ErrClosed is returned for messages published after Close.
var ErrClosed = errors.New("pubsub: publisher is closed")

// Publisher publishes events to Pub/Sub topics. It is safe for
// concurrent use.
type Publisher struct {
	cfg    Config
	client *pubsub.Client

	mu     sync.Mutex
	topics map[string]*pubsub.Publisher
	closed bool
}

var (
	_ broker.Publisher = (*Publisher)(nil)
	_ broker.Limiter   = (*Publisher)(nil)
	_ broker.Pinger    = (*Publisher)(nil)
)

// New checks cfg and makes the client. It does not wait for Pub/Sub: the
// client connects at the first call and again after an outage (Ping
// tells whether it answers).
func New(ctx context.Context, cfg Config) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client, err := newClient(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Publisher{cfg: cfg, client: client, topics: map[string]*pubsub.Publisher{}}, nil
}

// newClient makes a client whose publish calls are not retried.
func newClient(ctx context.Context, cfg Config) (*pubsub.Client, error) {
	noRetry := gax.WithRetry(func() gax.Retryer { return never{} })
	c, err := pubsub.NewClientWithConfig(ctx, cfg.Project,
		&pubsub.ClientConfig{TopicAdminCallOptions: &vkit.TopicAdminCallOptions{Publish: []gax.CallOption{noRetry}}},
		cfg.clientOptions()...)
	if err != nil {
		return nil, fmt.Errorf("pubsub: client for project %s: %w", cfg.Project, err)
	}
	return c, nil
}

// never is a gax.Retryer that never retries.
type never struct{}

func (never) Retry(error) (time.Duration, bool) { return 0, false }

// Guarantees: with ordering keys, one key's messages are stored in publish
// order; Pub/Sub does not dedupe publishes.
func (p *Publisher) Guarantees() broker.Guarantees {
	return broker.Guarantees{KeyOrder: p.cfg.WithDefaults().ordering()}
}

// MaxPayload implements broker.Limiter.
func (p *Publisher) MaxPayload() int { return p.cfg.MaxPayload }

// Ping implements broker.Pinger: one ListTopics call of the project.
// Only no answer (UNAVAILABLE, DEADLINE_EXCEEDED) is an outage; a refusal
// (permission) says Pub/Sub is there.
func (p *Publisher) Ping(ctx context.Context) error {
	ctx, cancel := withPingTimeout(ctx)
	defer cancel()
	// Not retried: the error says why (connection refused), not only that
	// the deadline passed.
	it := p.client.TopicAdminClient.ListTopics(ctx, &pb.ListTopicsRequest{Project: "projects/" + p.cfg.Project, PageSize: 1},
		gax.WithRetry(func() gax.Retryer { return never{} }))
	_, err := it.Next()
	if err == nil || errors.Is(err, iterator.Done) {
		return nil
	}
	if c := status.Code(err); c == codes.Unavailable || c == codes.DeadlineExceeded || ctx.Err() != nil {
		return herald.Unavailable(fmt.Errorf("pubsub: ping project %s: %w", p.cfg.Project, err))
	}
	return nil
}

// Close stops every topic's publisher (sending what they hold) and
// closes the client. Publish after Close fails with ErrClosed.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	for _, t := range p.topics {
		t.Stop()
	}
	return p.client.Close()
}

// topic returns the publisher of one topic, made on first use.
func (p *Publisher) topic(name string) (*pubsub.Publisher, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if t, ok := p.topics[name]; ok {
		return t, nil
	}
	t := p.client.Publisher(name)
	t.EnableMessageOrdering = p.cfg.ordering()
	t.PublishSettings.DelayThreshold = p.cfg.PublishDelay
	t.PublishSettings.CountThreshold = pubsub.MaxPublishRequestCount
	t.PublishSettings.ByteThreshold = MaxRequestBytes / 2
	t.PublishSettings.Timeout = publishRPCTimeout
	p.topics[name] = t
	return t, nil
}

// publishRPCTimeout bounds one publish request in the client (and so
// Close, which waits for them); a batch returns by its own deadline.
const publishRPCTimeout = 30 * time.Second

// Publish hands every message to its topic's publisher in order and waits
// for the answers; one result per message, in order, by ctx's deadline.
func (p *Publisher) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	results := make([]broker.Result, len(msgs))
	pending := make([]*pubsub.PublishResult, len(msgs))
	resumed := map[string]bool{}
	keyed.SendInOrder(msgs, results, func(i int) (err error) {
		pending[i], err = p.send(ctx, msgs[i], resumed)
		return err
	})
	for i, r := range pending {
		if r == nil {
			continue
		}
		id, err := r.Get(ctx)
		if err != nil {
			results[i].Err = classify(ctx, msgs[i], err)
			continue
		}
		results[i].Receipt = herald.Receipt{MessageID: id}
	}
	return results
}

// send maps one message and hands it to its topic's publisher. An
// ordering key paused by an earlier batch's failure is resumed first:
// that batch has returned, so nothing of the key can overtake it.
func (p *Publisher) send(ctx context.Context, m broker.Message, resumed map[string]bool) (*pubsub.PublishResult, error) {
	msg, err := p.message(m)
	if err != nil {
		return nil, herald.Permanent(err)
	}
	t, err := p.topic(m.Destination)
	if err != nil {
		return nil, err
	}
	if k := m.Destination + "\x00" + msg.OrderingKey; msg.OrderingKey != "" && !resumed[k] {
		t.ResumePublish(msg.OrderingKey)
		resumed[k] = true
	}
	return t.Publish(ctx, msg), nil
}

// Pub/Sub's limits on attributes and ordering keys.
const (
	maxAttributes     = 100
	maxAttributeKey   = 256
	maxAttributeValue = 1024
	maxOrderingKey    = 1024
)

// message maps a message to a Pub/Sub message, or says why it could
// never be published.
func (p *Publisher) message(m broker.Message) (*pubsub.Message, error) {
	ev := m.Event
	if len(ev.Payload) > p.cfg.MaxPayload {
		return nil, fmt.Errorf("%w: pubsub: event %s: payload is %d bytes, the limit (max_payload) is %d",
			herald.ErrPayloadTooLarge, ev.ID, len(ev.Payload), p.cfg.MaxPayload)
	}
	if m.Destination == "" {
		return nil, fmt.Errorf("pubsub: event %s: the topic (destination) is empty", ev.ID)
	}
	attrs := broker.Headers(m, HeaderPrefix, p.cfg.Source)
	if err := checkAttributes(ev.ID, attrs); err != nil {
		return nil, err
	}
	msg := &pubsub.Message{Data: ev.Payload, Attributes: attrs}
	if p.cfg.ordering() {
		if len(ev.PartitionKey) > maxOrderingKey {
			return nil, fmt.Errorf("pubsub: event %s: partition key is %d bytes, an ordering key at most %d", ev.ID, len(ev.PartitionKey), maxOrderingKey)
		}
		msg.OrderingKey = ev.PartitionKey
	}
	return msg, nil
}

// checkAttributes refuses what Pub/Sub would: too many attributes, a name
// or value over its size, a name Google reserves.
func checkAttributes(id string, attrs map[string]string) error {
	if len(attrs) > maxAttributes {
		return fmt.Errorf("pubsub: event %s: %d attributes (CloudEvents and user headers), Pub/Sub allows %d", id, len(attrs), maxAttributes)
	}
	for k, v := range attrs {
		switch {
		case len(k) > maxAttributeKey:
			return fmt.Errorf("pubsub: event %s: header %.40q… is %d bytes, an attribute name at most %d", id, k, len(k), maxAttributeKey)
		case len(v) > maxAttributeValue:
			return fmt.Errorf("pubsub: event %s: header %q is %d bytes, an attribute value at most %d", id, k, len(v), maxAttributeValue)
		case strings.HasPrefix(strings.ToLower(k), "goog"):
			return fmt.Errorf("pubsub: event %s: header %q: attribute names starting with goog are Google's", id, k)
		}
	}
	return nil
}

// classify sorts the error of one publish.
func classify(ctx context.Context, m broker.Message, err error) error {
	id, topic := m.Event.ID, m.Destination
	var paused pubsub.ErrPublishingPaused
	switch {
	case errors.As(err, &paused):
		return fmt.Errorf("%w: pubsub: event %s on %s: an earlier message of its ordering key failed: %v", broker.ErrHeldBack, id, topic, err)
	case errors.Is(err, pubsub.ErrOversizedMessage):
		return herald.Permanent(fmt.Errorf("%w: pubsub: event %s: the message is over Pub/Sub's request limit (%d bytes): %v",
			herald.ErrPayloadTooLarge, id, MaxRequestBytes, err))
	case errors.Is(err, pubsub.ErrPublisherStopped):
		return ErrClosed
	case ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		return herald.Unavailable(herald.Ambiguous(fmt.Errorf("pubsub: event %s on %s: no answer by the deadline: %w", id, topic, err)))
	}
	err = fmt.Errorf("pubsub: event %s on %s: %w", id, topic, err)
	switch status.Code(errors.Unwrap(err)) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return herald.Unavailable(herald.Ambiguous(err))
	case codes.ResourceExhausted:
		// Throttled (quota, flow control): refused, nothing stored.
		return herald.Unavailable(fmt.Errorf("throttled: %w", err))
	case codes.InvalidArgument, codes.OutOfRange:
		return herald.Permanent(err)
	case codes.NotFound, codes.PermissionDenied, codes.Unauthenticated, codes.FailedPrecondition:
		return err
	}
	return herald.Ambiguous(err)
}
