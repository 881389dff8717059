package sqs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/awsconf"
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
	aws    awsconf.Conn
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
	client := awssqs.NewFromConfig(awsCfg.Config)
	return &Publisher{cfg: cfg, aws: awsCfg, client: client, queues: &queues{client: client, known: map[string]queue{}}}, nil
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
	return awsconf.PingResult("sqs", err)
}

// Close implements broker.Publisher.
func (p *Publisher) Close() error {
	p.closed.Store(true)
	p.aws.Close()
	return nil
}

// outgoing is one message encoded for its queue.
type outgoing struct {
	awsmsg.Outgoing
	queue queue
}

// Publish implements broker.Publisher.
func (p *Publisher) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	if p.closed.Load() {
		return awsconf.AllFailed(len(msgs), ErrClosed)
	}
	results := make([]broker.Result, len(msgs))
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
		sizes[i] = out[i].Size()
	}
	awsmsg.Send(ctx, msgs, sizes, results, awsmsg.Batching{Entries: batchEntries, Bytes: batchBytes, Parallel: p.cfg.Parallel},
		func(ctx context.Context, _ string, idx []int) []broker.Result {
			return p.sendBatch(ctx, msgs, out, idx)
		})
	return results
}

// encode maps m onto its queue's message and checks it against the
// limits; the error is permanent.
func (p *Publisher) encode(m broker.Message, q queue) (outgoing, error) {
	o, err := awsmsg.Prepare(m, p.cfg.Source, awsmsg.Limits{Service: "sqs", MaxPayload: p.cfg.MaxPayload,
		MaxSize: q.maxSize, SizeName: "the queue's MaximumMessageSize", FIFO: q.fifo, DefaultGroup: p.cfg.MessageGroupID})
	return outgoing{Outgoing: o, queue: q}, err
}

// sendBatch sends msgs[idx...] (one queue) in one SendMessageBatch call
// and maps each entry's result to its message.
func (p *Publisher) sendBatch(ctx context.Context, msgs []broker.Message, out []outgoing, idx []int) []broker.Result {
	q := out[idx[0]].queue
	entries := make([]types.SendMessageBatchRequestEntry, len(idx))
	for j, i := range idx {
		o := out[i]
		e := types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(o.Body),
			MessageAttributes: attributes(o.Attributes)}
		if q.fifo {
			e.MessageGroupId, e.MessageDeduplicationId = aws.String(o.Group), aws.String(o.Dedup)
		}
		entries[j] = e
	}
	resp, err := p.client.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
	var answers []awsmsg.Answer
	if err == nil {
		for _, s := range resp.Successful {
			answers = append(answers, awsmsg.Answer{ID: aws.ToString(s.Id), MessageID: aws.ToString(s.MessageId)})
		}
		for _, f := range resp.Failed {
			answers = append(answers, awsmsg.Answer{ID: aws.ToString(f.Id), Code: aws.ToString(f.Code), Text: aws.ToString(f.Message)})
		}
	}
	ids := make([]string, len(idx))
	for j, i := range idx {
		ids[j] = msgs[i].Event.ID
	}
	return awsmsg.Results("sqs", queueName(q.url), ids, err, answers)
}

// attributes converts awsmsg attributes to SQS's.
func attributes(attrs map[string]string) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, len(attrs))
	for k, v := range attrs {
		out[k] = types.MessageAttributeValue{DataType: aws.String(awsmsg.DataType), StringValue: aws.String(v)}
	}
	return out
}
