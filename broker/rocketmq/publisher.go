// Package rocketmq publishes events to Apache RocketMQ with SendSync.
//
// # The message
//
// Map is the whole mapping, a pure function: the topic is the message's
// Destination (the lane's template); the tag is one constant (TagConstant,
// the legacy mode of the system Herald comes from) or the event type
// (TagEventType); the keys are the event id, then the values of the
// configured KeyHeaders (transaction_id, command_id, ...), so the broker's
// key index finds a message by any of them; the sharding key is the
// partition key; the body is the payload (BodyRaw) or a JSON Envelope
// (BodyEnvelope). The CloudEvents attributes are user properties with the
// binding's CE_ prefix, beside the user headers.
//
// # Order and outcomes
//
// A hash queue selector puts one sharding key on one queue, and a key's
// messages are sent one after another (keys run concurrently), so a queue
// holds a key's messages in order. SendOK is delivered.
// SendFlushDiskTimeout and SendFlushSlaveTimeout are ambiguous: the master
// has the message but did not flush or replicate it in time.
// SendSlaveNotAvailable is retryable and logged: the master stored the
// message but could not replicate it, so the retry may duplicate it (which
// consumers absorb by event id). A failure after
// the request was sent is ambiguous; broker refusals are retryable, except
// an illegal message (permanent). RocketMQ has no dedupe: consumers dedupe
// by event id (the first key, and the CE_id property).
//
// # Consuming
//
// NewSubscriber is the projector's source: a clustering consumer group on
// one topic whose queue offsets move only past messages the projector
// acked after its ledger commit (see Subscriber).
package rocketmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/internal/keyed"
)

// ErrClosed is returned for messages published after Close.
var ErrClosed = errors.New("rocketmq: publisher is closed")

// resMessageIllegal is the broker's MESSAGE_ILLEGAL response code: the
// message breaks a broker rule (size, properties) and never will pass.
const resMessageIllegal = 13

// Publisher sends events to RocketMQ. It is safe for concurrent use.
type Publisher struct {
	cfg    Config
	prod   rmq.Producer
	mu     sync.RWMutex // Publish holds it shared, Close exclusively
	closed bool
}

var (
	_ broker.Publisher = (*Publisher)(nil)
	_ broker.Limiter   = (*Publisher)(nil)
)

// New checks cfg and starts a producer. The client reaches the name
// servers lazily; an unreachable cluster shows as publish errors.
func New(_ context.Context, cfg Config) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rlog.SetLogLevel(cfg.LogLevel)
	retries := max(cfg.Retries, 0)
	opts := []producer.Option{
		producer.WithNameServer(cfg.NameServers),
		producer.WithGroupName(cfg.Group),
		// A distinct instance keeps two publishers in one process from
		// sharing (and shutting down) one client.
		producer.WithInstanceName("herald-" + herald.NewID()),
		producer.WithSendMsgTimeout(cfg.SendTimeout),
		producer.WithRetry(retries),
		producer.WithQueueSelector(producer.NewHashQueueSelector()),
	}
	if cfg.Namespace != "" {
		opts = append(opts, producer.WithNamespace(cfg.Namespace))
	}
	if cfg.AccessKey != "" {
		opts = append(opts, producer.WithCredentials(primitive.Credentials{AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey}))
	}
	prod, err := rmq.NewProducer(opts...)
	if err != nil {
		return nil, fmt.Errorf("rocketmq: new producer: %w", err)
	}
	if err := prod.Start(); err != nil {
		return nil, fmt.Errorf("rocketmq: start producer: %w", err)
	}
	return &Publisher{cfg: cfg, prod: prod}, nil
}

// Guarantees: per-key order (one key, one queue, sequential sends); no
// dedupe.
func (p *Publisher) Guarantees() broker.Guarantees { return broker.Guarantees{KeyOrder: true} }

// MaxPayload implements broker.Limiter.
func (p *Publisher) MaxPayload() int { return p.cfg.MaxPayload }

// Close shuts the producer down. Publish after Close fails with ErrClosed.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	return p.prod.Shutdown()
}

// Publish sends every message and returns one result per message, in order.
func (p *Publisher) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		results := make([]broker.Result, len(msgs))
		for i := range results {
			results[i].Err = ErrClosed
		}
		return results
	}
	return keyed.Run(ctx, msgs, p.cfg.Parallel, func(ctx context.Context, i int) broker.Result {
		return p.send(ctx, msgs[i])
	})
}

// send maps and sends one message.
func (p *Publisher) send(ctx context.Context, m broker.Message) broker.Result {
	mapped, err := Map(p.cfg, m)
	if err != nil {
		return broker.Result{Err: err}
	}
	msg := toPrimitive(mapped)
	res, err := p.prod.SendSync(ctx, msg)
	for try := 1; err != nil && noRoute(err) && try <= routeRetries; try++ {
		// The client fetches a new topic's route on its first send; sends
		// racing that fetch find no route. Nothing was sent: try again.
		if !sleepCtx(ctx, time.Duration(try)*routeRetryWait) {
			break
		}
		res, err = p.prod.SendSync(ctx, msg)
	}
	if err != nil {
		return broker.Result{Err: p.noNameServer(ctx, classify(m, err))}
	}
	return p.outcome(m, res)
}

// toPrimitive builds the SDK's message.
func toPrimitive(m Mapped) *primitive.Message {
	msg := primitive.NewMessage(m.Topic, m.Body)
	// WithProperties replaces the whole map: set it before the tag, keys
	// and sharding key, which are properties too.
	props := make(map[string]string, len(m.Properties)+3)
	for k, v := range m.Properties {
		props[k] = v
	}
	msg.WithProperties(props)
	msg.WithTag(m.Tag)
	msg.WithKeys(m.Keys)
	if m.ShardingKey != "" {
		msg.WithShardingKey(m.ShardingKey)
	}
	return msg
}

// outcome maps a SendResult status to a Result.
func (p *Publisher) outcome(m broker.Message, res *primitive.SendResult) broker.Result {
	receipt := herald.Receipt{MessageID: res.MsgID, Offset: res.QueueOffset}
	if res.MessageQueue != nil {
		receipt.Stream, receipt.Partition = res.MessageQueue.Topic, int32(res.MessageQueue.QueueId)
	}
	switch res.Status {
	case primitive.SendOK:
		return broker.Result{Receipt: receipt}
	case primitive.SendFlushDiskTimeout, primitive.SendFlushSlaveTimeout:
		return broker.Result{Err: herald.Ambiguous(fmt.Errorf("rocketmq: send to %s (event %s): %s", m.Destination, m.Event.ID, statusName(res.Status)))}
	case primitive.SendSlaveNotAvailable:
		p.cfg.Logger.Warn("rocketmq: slave not available; the master has the message unreplicated, retrying",
			"topic", m.Destination, "event_id", m.Event.ID, "msg_id", res.MsgID)
		return broker.Result{Err: fmt.Errorf("rocketmq: send to %s (event %s): slave not available", m.Destination, m.Event.ID)}
	}
	return broker.Result{Err: herald.Ambiguous(fmt.Errorf("rocketmq: send to %s (event %s): status %s", m.Destination, m.Event.ID, statusName(res.Status)))}
}

// statusName names a send status for errors.
func statusName(s primitive.SendStatus) string {
	switch s {
	case primitive.SendOK:
		return "SEND_OK"
	case primitive.SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case primitive.SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case primitive.SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return fmt.Sprintf("UNKNOWN(%d)", s)
}

// classify sorts a SendSync error into permanent, ambiguous or retryable.
func classify(m broker.Message, err error) error {
	wrapped := fmt.Errorf("rocketmq: send to %s (event %s): %w", m.Destination, m.Event.ID, err)
	code, refused := brokerCode(err)
	switch {
	case refused && code == resMessageIllegal:
		return herald.Permanent(wrapped)
	case refused:
		return wrapped // the broker answered and refused (SYSTEM_BUSY, ...): nothing stored
	case noRoute(err):
		return &noRouteError{wrapped} // never sent: no route yet (noNameServer tells why)
	case strings.Contains(err.Error(), "not running"):
		return wrapped // never sent: the producer is not started
	}
	// Timeouts and connection errors after the request left: maybe stored.
	// A refused or dropped connection also says the broker is not there,
	// which is the lane's outage, not this event's fault (the breaker).
	return broker.MarkUnreachable(herald.Ambiguous(wrapped))
}

// brokerCode finds the response code of a broker's refusal. The client
// reports a send refusal as a plain error "CODE: n, DESC: ..."
// (ProcessSendResponse), other calls as MQBrokerErr.
func brokerCode(err error) (int, bool) {
	var be primitive.MQBrokerErr
	var bep *primitive.MQBrokerErr
	switch {
	case errors.As(err, &be):
		return int(be.ResponseCode), true
	case errors.As(err, &bep):
		return int(bep.ResponseCode), true
	}
	var code int
	if _, scanErr := fmt.Sscanf(err.Error(), "CODE: %d, DESC:", &code); scanErr == nil {
		return code, true
	}
	return 0, false
}
