// Package kafka publishes events to Kafka with franz-go.
//
// # The record
//
// The topic is the message's Destination (the lane's template), the record
// key is the partition key (so one key lands on one partition, in order),
// the value is the payload, and the headers follow the CloudEvents Kafka
// binding: ce_id (the event id), ce_type, ce_source, ce_time, ce_subject,
// ce_tenant, plus the user headers (trace context included).
//
// # Delivery
//
// The producer is idempotent with acks=all: within one producer session
// the brokers drop a retried batch they already have, and a record is
// acknowledged only once every in-sync replica has it (set the topic's
// min.insync.replicas to 2 or more for that to mean something). Across
// sessions Kafka does not dedupe: consumers dedupe by ce_id.
//
// A batch is produced asynchronously and its results gathered in order. A
// record still unacknowledged at the batch deadline, or failed with a
// timeout or after retries, is ambiguous: it may be in the log. Records
// Kafka refuses (too large, invalid) are permanent.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/internal/keyed"
)

// HeaderPrefix is the CloudEvents Kafka binding's attribute prefix.
const HeaderPrefix = "ce_"

// ErrClosed is returned for messages published after Close.
var ErrClosed = errors.New("kafka: publisher is closed")

// Publisher produces events to Kafka. It is safe for concurrent use.
type Publisher struct {
	cfg    Config
	opts   []kgo.Opt // the client's, for a renewal (renew.go)
	client *kgo.Client
	mu     sync.RWMutex // Publish holds it shared, Close and renew exclusively
	closed bool
	stalls stalls
}

var (
	_ broker.Publisher = (*Publisher)(nil)
	_ broker.Limiter   = (*Publisher)(nil)
)

// New checks cfg and creates the producer. franz-go connects lazily, so an
// unreachable cluster shows as retryable publish errors, not here.
func New(_ context.Context, cfg Config) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(cfg.ClientID),
		kgo.DialTimeout(cfg.DialTimeout),
		// acks=all keeps the idempotent producer on (franz-go's default).
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(int32(cfg.MaxBatchBytes)),
		// Record retries stay unlimited (the default): the batch context,
		// the lane's publish_timeout, is what bounds a publish.
	}
	if cfg.AutoCreateTopics {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	if len(cfg.DialVia) > 0 {
		opts = append(opts, dialVia(cfg.DialVia, cfg.DialTimeout))
	}
	sec, err := securityOpts(cfg.TLS, cfg.SASL)
	if err != nil {
		return nil, err
	}
	opts = append(opts, sec...)
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	return &Publisher{cfg: cfg, opts: opts, client: client}, nil
}

// Guarantees: per-key order (one key, one partition, idempotent producer);
// no dedupe by event id, the idempotent producer covers one session only.
func (p *Publisher) Guarantees() broker.Guarantees { return broker.Guarantees{KeyOrder: true} }

// MaxPayload implements broker.Limiter.
func (p *Publisher) MaxPayload() int { return p.cfg.MaxPayload }

// Close closes the producer. Publish after Close fails with ErrClosed.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.client.Close()
	}
	return nil
}

// Publish produces every message and returns one result per message, in
// order, by ctx's deadline.
func (p *Publisher) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	results := p.produce(ctx, msgs)
	if p.stalls.count(results) {
		p.renew()
	}
	return results
}

// produce hands every message to the client and gathers the results.
func (p *Publisher) produce(ctx context.Context, msgs []broker.Message) []broker.Result {
	p.mu.RLock()
	defer p.mu.RUnlock()
	g := newGather(len(msgs))
	if p.closed {
		return g.failAll(ErrClosed)
	}
	failedKeys := map[string]bool{}
	for i, m := range msgs {
		key := m.Event.PartitionKey
		if key != "" && failedKeys[key] {
			g.set(i, broker.Result{Err: keyed.ErrEarlierFailed})
			continue
		}
		rec, err := p.record(m)
		if err != nil {
			// Refused before producing: hold back the rest of the key.
			failedKeys[key] = key != ""
			g.set(i, broker.Result{Err: herald.Permanent(err)})
			continue
		}
		p.client.Produce(ctx, rec, func(r *kgo.Record, err error) {
			if err != nil {
				g.set(i, broker.Result{Err: classify(m, err)})
				return
			}
			g.set(i, broker.Result{Receipt: herald.Receipt{Stream: r.Topic, Partition: r.Partition, Offset: r.Offset}})
		})
	}
	return g.wait(ctx)
}

// record maps a message to its Kafka record, or says why it never could be.
func (p *Publisher) record(m broker.Message) (*kgo.Record, error) {
	ev := m.Event
	if len(ev.Payload) > p.cfg.MaxPayload {
		return nil, fmt.Errorf("%w: kafka: event %s: payload is %d bytes, the limit (max_payload) is %d",
			herald.ErrPayloadTooLarge, ev.ID, len(ev.Payload), p.cfg.MaxPayload)
	}
	if m.Destination == "" {
		return nil, fmt.Errorf("kafka: event %s: the topic (destination) is empty", ev.ID)
	}
	h := broker.Headers(m, HeaderPrefix, p.cfg.Source)
	rec := &kgo.Record{Topic: m.Destination, Value: ev.Payload, Headers: make([]kgo.RecordHeader, 0, len(h))}
	if ev.PartitionKey != "" {
		rec.Key = []byte(ev.PartitionKey)
	}
	for k, v := range h {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	return rec, nil
}

// classify sorts a produce failure into permanent, ambiguous or retryable.
func classify(m broker.Message, err error) error {
	wrapped := fmt.Errorf("kafka: produce to %s (event %s): %w", m.Destination, m.Event.ID, err)
	switch {
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge),
		errors.Is(err, kerr.InvalidRecord), errors.Is(err, kerr.InvalidTopicException):
		return herald.Permanent(wrapped)
	case errors.Is(err, kgo.ErrClientClosed), errors.Is(err, kgo.ErrMaxBuffered):
		return wrapped // never handed to a broker
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.TopicAuthorizationFailed),
		errors.Is(err, kerr.ClusterAuthorizationFailed):
		return wrapped // refused before writing; fixable by an operator
	case errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.LeaderNotAvailable),
		errors.Is(err, kerr.BrokerNotAvailable), errors.Is(err, kerr.NotEnoughReplicas):
		// The partition has no leader to write to: nothing written, and
		// nothing said about this event.
		return herald.Unavailable(wrapped)
	case errors.Is(err, kerr.NetworkException), errors.Is(err, kerr.RequestTimedOut),
		errors.Is(err, kgo.ErrRecordTimeout), broker.Unreachable(err):
		// No answer from the cluster: may have been written, and the
		// cluster is not there.
		return herald.Unavailable(herald.Ambiguous(wrapped))
	}
	// Timeouts, exhausted retries, a cancelled context, a dropped
	// connection: the batch may have been written.
	return herald.Ambiguous(wrapped)
}

// gather collects promise results in order and stops waiting at the
// deadline; late promises are dropped, never written after Publish returns.
type gather struct {
	mu       sync.Mutex
	results  []broker.Result
	isSet    []bool
	left     int
	done     chan struct{}
	returned bool
}

func newGather(n int) *gather {
	g := &gather{results: make([]broker.Result, n), isSet: make([]bool, n), left: n, done: make(chan struct{})}
	if n == 0 {
		close(g.done)
	}
	return g
}

func (g *gather) set(i int, r broker.Result) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.returned || g.isSet[i] {
		return
	}
	g.results[i], g.isSet[i] = r, true
	if g.left--; g.left == 0 {
		close(g.done)
	}
}

func (g *gather) failAll(err error) []broker.Result {
	for i := range g.results {
		g.results[i].Err = err
	}
	return g.results
}

// wait returns the results once all are in, or at ctx's end with the
// missing ones ambiguous (they were handed to the producer).
func (g *gather) wait(ctx context.Context) []broker.Result {
	select {
	case <-g.done:
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.returned = true
	out := make([]broker.Result, len(g.results))
	copy(out, g.results)
	for i, ok := range g.isSet {
		if !ok {
			// No answer at all by the deadline: the cluster is not there
			// (franz-go retries unreachable brokers until then). The relay
			// counts it against the event only when other records of the
			// round got answers.
			out[i].Err = herald.Unavailable(herald.Ambiguous(
				fmt.Errorf("kafka: no acknowledgement by the deadline: %w", context.Cause(ctx))))
		}
	}
	return out
}
