package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// SubscriberConfig configures a Subscriber: one member of a consumer group.
type SubscriberConfig struct {
	// Brokers are the seed brokers. Defaults to 127.0.0.1:9092.
	Brokers []string
	// Group is the consumer group: every process of one projection uses
	// the same one and Kafka splits the partitions among them. Required.
	Group string
	// Topics are the topics to consume. Required.
	Topics []string
	// ClientID names the consumer in broker logs. Defaults to "herald-projector".
	ClientID string
	// TLS, when set, connects over TLS (as Config.TLS).
	TLS *TLSConfig
	// SASL, when set, authenticates with SASL PLAIN or SCRAM (as Config.SASL).
	SASL *SASLConfig
	// DialVia maps broker addresses to the address to dial instead (as
	// Config.DialVia).
	DialVia map[string]string
	// Opts are extra franz-go options (timeouts, …), appended last.
	Opts []kgo.Opt
	// Logger receives the fetch errors that come together with records
	// (one partition failing while others deliver); a poll with errors
	// only is Receive's error. Defaults to slog.Default().
	Logger *slog.Logger
}

// Subscriber is a broker.Subscriber on a Kafka consumer group. A new group
// starts at the earliest offset.
//
// Kafka keeps one offset per partition, so an ack cannot settle one record
// alone: the Subscriber tracks the records it handed out per partition and
// marks for commit only the offset below which every record was acked.
// Marks are committed every few seconds and when partitions are revoked.
// After a crash the group resumes from the last commit, and the records
// after it that were applied already are answered "done" by the projection
// table. A record's partition is owned by one member at a time, so one
// partition key's records are applied in order (also across rebalances:
// each member applies in order and a done record stays done).
type Subscriber struct {
	cl     *kgo.Client
	errlog *errorLog

	mu    sync.Mutex
	parts map[partition]*tracker
}

type partition struct {
	topic string
	part  int32
}

// tracker is one partition's records handed out and not yet committable.
// The records of one tracker ascend by offset; when the client hands out an
// offset again (its position was reset after the broker reported records
// lost, or after an out-of-range offset), the partition gets a new tracker
// and the old one's acks are ignored: those records come again.
type tracker struct {
	pending []int64 // offsets in the order handed out (ascending)
	acked   map[int64]bool
	last    int64 // the highest offset added; -1 before the first
	epoch   int32
	gone    bool // revoked, lost or rewound: later acks are ignored
}

func newTracker() *tracker { return &tracker{acked: map[int64]bool{}, last: -1} }

// add registers a handed-out offset; it reports false, adding nothing, if
// the offset is not above every offset added before.
func (t *tracker) add(offset int64, epoch int32) bool {
	if offset <= t.last {
		return false
	}
	t.pending = append(t.pending, offset)
	t.last, t.epoch = offset, epoch
	return true
}

// settle records one ack and returns the offset after the longest acked
// prefix of the records handed out, or -1 if that prefix did not grow.
func (t *tracker) settle(offset int64) int64 {
	if t.gone {
		return -1
	}
	t.acked[offset] = true
	next := int64(-1)
	for len(t.pending) > 0 && t.acked[t.pending[0]] {
		delete(t.acked, t.pending[0])
		next = t.pending[0] + 1
		t.pending = t.pending[1:]
	}
	return next
}

var _ broker.Subscriber = (*Subscriber)(nil)

// NewSubscriber joins the consumer group.
func NewSubscriber(_ context.Context, cfg SubscriberConfig) (*Subscriber, error) {
	if cfg.Group == "" || len(cfg.Topics) == 0 {
		return nil, errors.New("kafka: subscriber: Group and Topics are required")
	}
	if len(cfg.Brokers) == 0 {
		cfg.Brokers = []string{DefaultBroker}
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "herald-projector"
	}
	sec, err := securityOpts(cfg.TLS, cfg.SASL)
	if err != nil {
		return nil, fmt.Errorf("kafka: subscriber: %w", err)
	}
	s := &Subscriber{parts: map[partition]*tracker{}, errlog: newErrorLog(cfg.Logger)}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(cfg.ClientID),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AutoCommitMarks(),
		kgo.OnPartitionsRevoked(s.forget),
		kgo.OnPartitionsLost(s.forget),
	}, sec...)
	if len(cfg.DialVia) > 0 {
		opts = append(opts, dialVia(cfg.DialVia, DefaultDialTimeout))
	}
	opts = append(opts, cfg.Opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: subscriber: %w", err)
	}
	s.cl = cl
	return s, nil
}

// forget drops the trackers of partitions this member no longer owns. On
// a revoke, the marks made so far are committed first (the client does
// that before calling back).
func (s *Subscriber) forget(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for topic, parts := range lost {
		for _, p := range parts {
			if t := s.parts[partition{topic, p}]; t != nil {
				t.gone = true
				delete(s.parts, partition{topic, p})
			}
		}
	}
}

// Receive polls up to most records, waiting until some arrive or ctx ends.
func (s *Subscriber) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	for {
		fs := s.cl.PollRecords(ctx, most)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if fs.IsClientClosed() {
			return nil, errors.New("kafka: subscriber is closed")
		}
		var out []broker.Received
		fs.EachRecord(func(r *kgo.Record) { out = append(out, s.received(r)) })
		if len(out) > 0 {
			s.errlog.log(fs.Errors(), time.Now())
			return out, nil
		}
		if errs := fs.Errors(); len(errs) > 0 {
			e := errs[0]
			return nil, fmt.Errorf("kafka: poll %s/%d: %w", e.Topic, e.Partition, e.Err)
		}
	}
}

// recordEvent decodes a record per the message contract (Kafka binding); a
// record without ce_id gets its position as id, stable across redeliveries,
// and the record key stands in for a missing ce_subject.
func recordEvent(r *kgo.Record) herald.Event {
	h := make(map[string]string, len(r.Headers))
	for _, kv := range r.Headers {
		h[kv.Key] = string(kv.Value)
	}
	ev := broker.EventFromHeaders(h, HeaderPrefix, r.Value)
	if ev.ID == "" {
		ev.ID = fmt.Sprintf("kafka:%s:%d:%d", r.Topic, r.Partition, r.Offset)
	}
	if ev.PartitionKey == "" && len(r.Key) > 0 {
		ev.PartitionKey = string(r.Key)
	}
	return ev
}

// received decodes a record and registers it with its partition's tracker.
// A record without ce_id gets its position as id, stable across redeliveries.
func (s *Subscriber) received(r *kgo.Record) broker.Received {
	ev := recordEvent(r)
	key := partition{r.Topic, r.Partition}
	s.mu.Lock()
	t := s.parts[key]
	if t == nil || !t.add(r.Offset, r.LeaderEpoch) {
		if t != nil {
			t.gone = true // rewound: this record and the ones after it come again
		}
		t = newTracker()
		t.add(r.Offset, r.LeaderEpoch)
		s.parts[key] = t
	}
	s.mu.Unlock()
	ack := func(context.Context) error { s.ack(key, t, r.Offset); return nil }
	return broker.Received{Event: ev, Ack: ack,
		// Kafka cannot hand one record back; an unacked record is read
		// again after a restart or rebalance, from the committed offset.
		Nack: func(context.Context) error { return nil }}
}

// ack settles one offset and marks for commit the offset after the longest
// acked prefix of the partition's records.
func (s *Subscriber) ack(key partition, t *tracker, offset int64) {
	s.mu.Lock()
	next := t.settle(offset)
	epoch := t.epoch
	s.mu.Unlock()
	// Outside s.mu: the client takes its own lock here, and holds it
	// when it calls forget.
	if next >= 0 {
		s.cl.MarkCommitOffsets(map[string]map[int32]kgo.EpochOffset{
			key.topic: {key.part: {Epoch: epoch, Offset: next}},
		})
	}
}

// Close commits the marked offsets and leaves the group.
func (s *Subscriber) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.cl.CommitMarkedOffsets(ctx)
	s.cl.Close()
	if err != nil {
		return fmt.Errorf("kafka: commit on close: %w", err)
	}
	return nil
}
