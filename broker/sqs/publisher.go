package sqs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/internal/awsconf"
	"github.com/heraldhq/herald/broker/internal/awsmsg"
)

// HeaderPrefix is the CloudEvents attribute prefix of SQS messages.
const HeaderPrefix = awsmsg.HeaderPrefix

// ErrClosed fails messages published after Close.
var ErrClosed = errors.New("sqs: publisher is closed")

// batchEntries and batchBytes are SendMessageBatch's limits: 10 messages,
// and 256 KiB in all (a message larger than that, on a queue that allows
// it, goes alone).
const (
	batchEntries = 10
	batchBytes   = DefaultMaxMessageSize
)

// Publisher publishes to SQS queues with SendMessageBatch. The SDK's own
// retries are off: a failed message comes back to the relay, whose retry
// policy and breaker decide.
type Publisher struct {
	cfg    Config
	client *awssqs.Client
	queues *queues
	closed atomic.Bool
}

var (
	_ broker.Publisher = (*Publisher)(nil)
	_ broker.Limiter   = (*Publisher)(nil)
	_ broker.Pinger    = (*Publisher)(nil)
)

// New returns a publisher for cfg. It resolves the region and credentials
// (a *broker.ConfigError naming the key when there are none) and does not
// call SQS: queues are looked up at their first message.
func New(ctx context.Context, cfg Config) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sqs: %w", err)
	}
	awsCfg, err := cfg.Settings.Load(ctx, 1)
	if err != nil {
		return nil, err
	}
	client := awssqs.NewFromConfig(awsCfg)
	return &Publisher{cfg: cfg, client: client, queues: &queues{client: client, known: map[string]queue{}}}, nil
}

// Guarantees implements the declaration brokertest checks, for standard
// queues: no order, no dedupe. FIFO queues keep each partition key's
// order and drop an event id seen within 5 minutes.
func (p *Publisher) Guarantees() broker.Guarantees { return broker.Guarantees{} }

// FIFOGuarantees is what a FIFO queue adds.
var FIFOGuarantees = broker.Guarantees{KeyOrder: true, Dedupe: true, DedupeWindow: DedupeInterval}

// DedupeInterval is SQS's deduplication interval on FIFO queues.
const DedupeInterval = 5 * time.Minute

// MaxPayload implements broker.Limiter.
func (p *Publisher) MaxPayload() int { return p.cfg.MaxPayload }

// Ping implements broker.Pinger: one ListQueues call. An answer refusing
// it (no permission to list) still proves SQS is reachable.
func (p *Publisher) Ping(ctx context.Context) error {
	_, err := p.client.ListQueues(ctx, &awssqs.ListQueuesInput{MaxResults: aws.Int32(1)})
	if awsconf.Reachable(err) {
		return nil
	}
	return herald.Unavailable(fmt.Errorf("sqs: ping: %w", err))
}

// Close implements broker.Publisher.
func (p *Publisher) Close() error {
	p.closed.Store(true)
	return nil
}

// outgoing is one message encoded for its queue.
type outgoing struct {
	msg   awsmsg.Message
	queue queue
	group string
	dedup string
}

// Publish implements broker.Publisher.
func (p *Publisher) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	results := make([]broker.Result, len(msgs))
	if p.closed.Load() {
		for i := range results {
			results[i].Err = ErrClosed
		}
		return results
	}
	out := make([]outgoing, len(msgs))
	sizes := make([]int, len(msgs))
	resolved := map[string]queue{}
	for i, m := range msgs {
		q, ok := resolved[m.Destination]
		if !ok {
			var err error
			if q, err = p.queues.resolve(ctx, m.Destination); err != nil {
				results[i].Err = err
				continue
			}
			resolved[m.Destination] = q
		}
		out[i], results[i].Err = p.encode(m, q)
		sizes[i] = out[i].msg.Size()
	}
	awsmsg.Send(ctx, msgs, sizes, results, awsmsg.Batching{Entries: batchEntries, Bytes: batchBytes, Parallel: p.cfg.Parallel},
		func(ctx context.Context, _ string, idx []int) []broker.Result { return p.sendBatch(ctx, msgs, out, idx) })
	return results
}

// encode maps m onto its queue's message and checks it against the
// limits; the error is permanent.
func (p *Publisher) encode(m broker.Message, q queue) (outgoing, error) {
	o := outgoing{msg: awsmsg.Encode(m, p.cfg.Source), queue: q}
	id, payload, size := m.Event.ID, len(m.Event.Payload), o.msg.Size()
	switch {
	case payload > p.cfg.MaxPayload:
		return o, herald.Permanent(awsmsg.TooLarge("sqs", id, payload, payload, p.cfg.MaxPayload, "max_payload"))
	case size > q.maxSize:
		return o, herald.Permanent(awsmsg.TooLarge("sqs", id, payload, size, q.maxSize,
			"the queue's MaximumMessageSize"))
	}
	if !q.fifo {
		return o, nil
	}
	o.group, o.dedup = sqsID(m.Event.PartitionKey), sqsID(id)
	if o.group == "" {
		o.group = p.cfg.MessageGroupID
	}
	if o.group == "" {
		return o, herald.Permanent(fmt.Errorf("sqs: event %s has no partition key, and FIFO queue %s needs a MessageGroupId: "+
			"set the broker's message_group_id or give the event a partition key", id, queueName(m.Destination)))
	}
	return o, nil
}

// sqsID returns s as an SQS group or deduplication id: itself when SQS
// takes it (up to 128 of a-z A-Z 0-9 and ASCII punctuation), else a
// SHA-256 of it, the same for the same s so that order and dedupe hold.
func sqsID(s string) string {
	ok := len(s) <= 128
	for i := 0; ok && i < len(s); i++ {
		ok = s[i] > ' ' && s[i] < 0x7f
	}
	if ok {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + hex.EncodeToString(sum[:])
}

// sendBatch sends msgs[idx...] (one queue) in one SendMessageBatch call
// and maps each entry's result to its message.
func (p *Publisher) sendBatch(ctx context.Context, msgs []broker.Message, out []outgoing, idx []int) []broker.Result {
	res := make([]broker.Result, len(idx))
	q := out[idx[0]].queue
	entries := make([]types.SendMessageBatchRequestEntry, len(idx))
	for j, i := range idx {
		o := out[i]
		e := types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(o.msg.Body),
			MessageAttributes: attributes(o.msg.Attributes)}
		if q.fifo {
			e.MessageGroupId, e.MessageDeduplicationId = aws.String(o.group), aws.String(o.dedup)
		}
		entries[j] = e
	}
	resp, err := p.client.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
	if err != nil {
		err = fmt.Errorf("sqs: send to %s: %w", queueName(q.url), awsconf.Request(err))
		for j := range res {
			res[j].Err = err
		}
		return res
	}
	answered := make([]bool, len(idx))
	for _, s := range resp.Successful {
		if j, ok := entryIndex(s.Id, len(idx)); ok {
			res[j].Receipt, answered[j] = herald.Receipt{MessageID: aws.ToString(s.MessageId)}, true
		}
	}
	for _, f := range resp.Failed {
		if j, ok := entryIndex(f.Id, len(idx)); ok {
			code, text := aws.ToString(f.Code), aws.ToString(f.Message)
			res[j].Err, answered[j] = awsconf.Wrap(awsconf.CodeKind(code, text),
				fmt.Errorf("sqs: event %s refused by %s: %s: %s", msgs[idx[j]].Event.ID, queueName(q.url), code, text)), true
		}
	}
	for j, ok := range answered {
		if !ok {
			res[j].Err = herald.Ambiguous(fmt.Errorf("sqs: event %s: SendMessageBatch answered nothing for it", msgs[idx[j]].Event.ID))
		}
	}
	return res
}

// entryIndex reads a batch entry id back as its index.
func entryIndex(id *string, n int) (int, bool) {
	j, err := strconv.Atoi(aws.ToString(id))
	return j, err == nil && j >= 0 && j < n
}

// attributes converts awsmsg attributes to SQS's.
func attributes(attrs map[string]string) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, len(attrs))
	for k, v := range attrs {
		out[k] = types.MessageAttributeValue{DataType: aws.String(awsmsg.DataType), StringValue: aws.String(v)}
	}
	return out
}
