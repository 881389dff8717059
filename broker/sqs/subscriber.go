package sqs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/awsconf"
	"github.com/heraldhq/herald/broker/internal/awsmsg"
)

// SubscriberConfig configures a Subscriber on one queue.
type SubscriberConfig struct {
	// Settings: region, endpoint, profile and credentials, as Config's.
	awsconf.Settings
	// Queue is the queue's name or URL. Required. Every process of one
	// projection reads the same queue; SQS spreads its messages.
	Queue string
	// WaitTime is the long poll of one ReceiveMessage call. Defaults to
	// 20s, SQS's longest.
	WaitTime time.Duration
	// VisibilityTimeout is how long a received message stays hidden from
	// other consumers; the subscriber extends it while the message is
	// being applied, so it ends only for a consumer that died. Defaults
	// to 30s.
	VisibilityTimeout time.Duration
	// Logger receives failed visibility extensions. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// Subscriber is a broker.Subscriber on an SQS queue. Ack deletes the
// message (DeleteMessageBatch, acks of several workers gathered); Nack
// makes it visible again at once. A message neither acked nor nacked has
// its visibility extended every third of VisibilityTimeout until it is,
// or the subscriber closes: a consumer killed after its ledger commit and
// before the delete leaves the message to reappear after the timeout, and
// the projection table answers "done" for it. On a FIFO queue SQS hands
// out no message of a group while one is in flight, so one partition
// key's events are applied in order. Messages an SNS topic delivered
// without raw delivery are unwrapped from SNS's JSON envelope.
type Subscriber struct {
	cfg    SubscriberConfig
	conn   awsconf.Conn
	client *awssqs.Client
	url    string
	log    *slog.Logger

	mu   sync.Mutex
	held map[string]bool // receipt handles received, not settled

	deletes chan deleteReq
	stop    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

var _ broker.Subscriber = (*Subscriber)(nil)

// deleteReq is one ack waiting for its DeleteMessageBatch.
type deleteReq struct {
	handle string
	done   chan error
}

// errSubscriberClosed fails acks after Close.
var errSubscriberClosed = errors.New("sqs: subscriber is closed")

// NewSubscriber resolves the queue and starts the ack and visibility
// goroutines.
func NewSubscriber(ctx context.Context, cfg SubscriberConfig) (*Subscriber, error) {
	if cfg.Queue == "" {
		return nil, errors.New("sqs: subscriber: Queue is required")
	}
	if cfg.WaitTime <= 0 || cfg.WaitTime > 20*time.Second {
		cfg.WaitTime = 20 * time.Second
	}
	if cfg.VisibilityTimeout <= 0 {
		cfg.VisibilityTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := cfg.Settings.Validate(); err != nil {
		return nil, fmt.Errorf("sqs: subscriber: %w", err)
	}
	awsCfg, err := cfg.Settings.Load(ctx, 3)
	if err != nil {
		return nil, err
	}
	s := &Subscriber{cfg: cfg, conn: awsCfg, client: awssqs.NewFromConfig(awsCfg.Config), log: cfg.Logger, held: map[string]bool{},
		deletes: make(chan deleteReq), stop: make(chan struct{})}
	q := &queues{client: s.client, known: map[string]queue{}}
	got, err := q.resolve(ctx, cfg.Queue)
	if err != nil {
		s.conn.Close()
		return nil, fmt.Errorf("sqs: subscriber: %w", err)
	}
	s.url = got.url
	s.wg.Go(s.deleter)
	s.wg.Go(s.extender)
	return s, nil
}

// Receive long-polls until at least one message comes or ctx ends, and
// returns up to most (at most 10, SQS's limit per call).
func (s *Subscriber) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	for {
		resp, err := s.client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
			QueueUrl: aws.String(s.url), MaxNumberOfMessages: int32(min(max(most, 1), 10)),
			WaitTimeSeconds: int32(s.cfg.WaitTime / time.Second), VisibilityTimeout: int32(s.cfg.VisibilityTimeout / time.Second),
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId},
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("sqs: receive from %s: %w", queueName(s.url), err)
		}
		if len(resp.Messages) == 0 {
			continue
		}
		out := make([]broker.Received, len(resp.Messages))
		s.mu.Lock()
		for i, m := range resp.Messages {
			handle := aws.ToString(m.ReceiptHandle)
			s.held[handle] = true
			out[i] = broker.Received{Event: messageEvent(m, s.log),
				Ack:  func(ctx context.Context) error { return s.ack(ctx, handle) },
				Nack: func(ctx context.Context) error { return s.nack(ctx, handle) }}
		}
		s.mu.Unlock()
		return out, nil
	}
}

// messageEvent decodes a message per the message contract; the SQS
// message id stands in for a missing ce-id, the group for a missing
// ce-subject. A message that cannot be decoded keeps its body as the
// payload (and is logged).
func messageEvent(m types.Message, log *slog.Logger) herald.Event {
	attrs := make(map[string]string, len(m.MessageAttributes))
	for k, v := range m.MessageAttributes {
		attrs[k] = aws.ToString(v.StringValue)
	}
	body := aws.ToString(m.Body)
	if _, ok := attrs[HeaderPrefix+"id"]; !ok {
		if a, b, ok := snsEnvelope(body); ok {
			attrs, body = a, b
		}
	}
	ev, err := awsmsg.Decode(attrs, body)
	if err != nil {
		log.Warn("sqs: message decoded without its packed headers or encoding", "message_id", aws.ToString(m.MessageId), "err", err)
		ev = broker.EventFromHeaders(attrs, HeaderPrefix, []byte(body))
	}
	if ev.ID == "" {
		ev.ID = aws.ToString(m.MessageId)
	}
	if ev.PartitionKey == "" {
		ev.PartitionKey = m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
	}
	return ev
}

// ack deletes the message through the batching deleter.
func (s *Subscriber) ack(ctx context.Context, handle string) error {
	req := deleteReq{handle: handle, done: make(chan error, 1)}
	select {
	case s.deletes <- req:
	case <-s.stop:
		return errSubscriberClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// nack makes the message visible again at once.
func (s *Subscriber) nack(ctx context.Context, handle string) error {
	s.settled(handle)
	_, err := s.client.ChangeMessageVisibility(ctx, &awssqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(s.url),
		ReceiptHandle: aws.String(handle), VisibilityTimeout: 0})
	return err
}

func (s *Subscriber) settled(handle string) {
	s.mu.Lock()
	delete(s.held, handle)
	s.mu.Unlock()
}

// deleter gathers the acks that come while a DeleteMessageBatch is on
// its way into the next one (up to 10).
func (s *Subscriber) deleter() {
	for {
		var batch []deleteReq
		select {
		case r := <-s.deletes:
			batch = append(batch, r)
		case <-s.stop:
			return
		}
	gather:
		for len(batch) < 10 {
			select {
			case r := <-s.deletes:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		s.deleteBatch(batch)
	}
}

// deleteTimeout bounds one DeleteMessageBatch.
const deleteTimeout = 10 * time.Second

// deleteBatch deletes the batch's messages and answers each ack.
func (s *Subscriber) deleteBatch(batch []deleteReq) {
	entries := make([]types.DeleteMessageBatchRequestEntry, len(batch))
	for i, r := range batch {
		s.settled(r.handle)
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: aws.String(r.handle)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	resp, err := s.client.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(s.url), Entries: entries})
	errs := make([]error, len(batch))
	if err != nil {
		for i := range errs {
			errs[i] = fmt.Errorf("sqs: delete: %w", err)
		}
	} else {
		for _, f := range resp.Failed {
			if i, err := strconv.Atoi(aws.ToString(f.Id)); err == nil && i >= 0 && i < len(batch) {
				errs[i] = fmt.Errorf("sqs: delete: %s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
			}
		}
	}
	for i, r := range batch {
		r.done <- errs[i]
	}
}

// extender extends the visibility of the messages held, every third of
// the visibility timeout.
func (s *Subscriber) extender() {
	tick := time.NewTicker(s.cfg.VisibilityTimeout / 3)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			s.extend()
		case <-s.stop:
			return
		}
	}
}

// extend sends ChangeMessageVisibilityBatch for every message held.
func (s *Subscriber) extend() {
	s.mu.Lock()
	handles := make([]string, 0, len(s.held))
	for h := range s.held {
		handles = append(handles, h)
	}
	s.mu.Unlock()
	for start := 0; start < len(handles); start += 10 {
		part := handles[start:min(start+10, len(handles))]
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(part))
		for i, h := range part {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: aws.String(h),
				VisibilityTimeout: int32(s.cfg.VisibilityTimeout / time.Second)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
		_, err := s.client.ChangeMessageVisibilityBatch(ctx, &awssqs.ChangeMessageVisibilityBatchInput{
			QueueUrl: aws.String(s.url), Entries: entries})
		cancel()
		if err != nil {
			s.log.Warn("sqs: extending the visibility of messages being applied failed; they may be redelivered (the projection table answers done)",
				"queue", queueName(s.url), "messages", len(part), "err", err)
		}
	}
}

// Close stops receiving, acking and extending; messages not acked
// reappear after their visibility timeout.
func (s *Subscriber) Close() error {
	s.once.Do(func() { close(s.stop) })
	s.wg.Wait()
	s.conn.Close()
	return nil
}
