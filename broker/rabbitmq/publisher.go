// Package rabbitmq publishes events to RabbitMQ (AMQP 0-9-1) with publisher
// confirms.
//
// # The message
//
// Every message goes to Config.Exchange with the message's Destination (the
// lane's template) as the routing key. The body is the payload; message-id
// is the event id; type is the event type; timestamp is the event's
// creation time; content-type is the event's "content-type" header. The
// CloudEvents attributes travel in the headers table with the JMS-safe AMQP
// binding prefix "cloudEvents_" (cloudEvents_id, cloudEvents_type, ...),
// beside the user headers (trace context included). Delivery mode is
// persistent unless Config.Transient.
//
// # Confirms and errors
//
// The channel is in confirm mode and messages are mandatory: a message is
// delivered once the broker acks it; one no queue is bound for comes back
// as ErrUnroutable (retryable: RabbitMQ would otherwise confirm and drop
// it); a nack is ErrNacked (retryable). A message unconfirmed when the
// batch deadline passes or the channel drops is ambiguous. For "acked"
// to mean "on disk", publish to durable queues (quorum queues preferably).
//
// # Reconnecting
//
// One connection with one channel serves all batches. When it drops, the
// next Publish dials again (bounded by its context); until the broker is
// back, messages fail with retryable errors.
package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/internal/keyed"
)

// HeaderPrefix is the CloudEvents AMQP binding prefix in its JMS-safe form.
const HeaderPrefix = "cloudEvents_"

// ErrClosed is returned for messages published after Close.
var ErrClosed = errors.New("rabbitmq: publisher is closed")

// Publisher publishes events to one exchange. It is safe for concurrent use.
type Publisher struct {
	cfg    Config
	mu     sync.Mutex // guards sess and closed; held while dialing
	sess   *session
	closed bool
	// serverLimit is the default max_message_size of the server's version
	// (0: unknown); refused is the limit a server named when it refused a
	// message (0: none yet). See limit.go.
	serverLimit, refused atomic.Int64
}

var (
	_ broker.Publisher = (*Publisher)(nil)
	_ broker.Limiter   = (*Publisher)(nil)
)

// New checks cfg and connects within ctx; the exchange must exist.
func New(ctx context.Context, cfg Config) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Publisher{cfg: cfg}
	s, err := dial(ctx, cfg, &p.refused)
	if err != nil {
		return nil, err
	}
	p.use(s)
	return p, nil
}

// use makes s the publisher's session and takes its server's limit.
func (p *Publisher) use(s *session) {
	p.sess = s
	p.serverLimit.Store(int64(versionLimit(s.conn.Properties)))
}

// Guarantees: one channel publishes in order, so a queue holds a key's
// messages in publish order; RabbitMQ has no dedupe.
func (p *Publisher) Guarantees() broker.Guarantees { return broker.Guarantees{KeyOrder: true} }

// MaxPayload implements broker.Limiter: max_payload, else the server's
// (see Config.MaxPayload); lower if the server refused a message naming a
// lower limit.
func (p *Publisher) MaxPayload() int {
	n, _ := p.limit()
	return n
}

// limit is MaxPayload and what it comes from, for errors.
func (p *Publisher) limit() (int, string) {
	n, source := p.cfg.MaxPayload, "max_payload"
	if n == 0 {
		n, source = int(p.serverLimit.Load()), "the server version's default max_message_size"
	}
	if n == 0 {
		n, source = DefaultMaxPayload, "Herald's default for RabbitMQ"
	}
	if r := int(p.refused.Load()); r > 0 && r < n {
		n, source = r, "the server's max_message_size"
	}
	return n, source
}

// Close closes the connection. Publish after Close fails with ErrClosed.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if p.sess == nil {
		return nil
	}
	err := p.sess.close()
	p.sess = nil
	return err
}

// session returns a live session, dialing a new one if the last dropped.
func (p *Publisher) session(ctx context.Context) (*session, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if p.sess != nil && !p.sess.lost() {
		return p.sess, nil
	}
	if p.sess != nil {
		_ = p.sess.close()
		p.sess = nil
	}
	s, err := dial(ctx, p.cfg, &p.refused)
	if err != nil {
		// No connection, channel or exchange: nothing about any event.
		return nil, herald.Unavailable(fmt.Errorf("not sent: %w", err))
	}
	p.use(s)
	return s, nil
}

// Publish sends every message and waits for the confirms; one result per
// message, in order, by ctx's deadline.
func (p *Publisher) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	results := make([]broker.Result, len(msgs))
	if len(msgs) == 0 {
		return results
	}
	s, err := p.session(ctx)
	if err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	waiters := make([]*waiter, len(msgs))
	keyed.SendInOrder(msgs, results, func(i int) (err error) {
		waiters[i], err = p.send(ctx, s, msgs[i])
		return err
	})
	for i, w := range waiters {
		if w == nil {
			continue
		}
		select {
		case <-w.done:
			results[i] = broker.Result{Err: w.err}
			if w.err == nil {
				results[i].Receipt = herald.Receipt{MessageID: msgs[i].Event.ID}
			}
		case <-ctx.Done():
			// No answer: the broker is not there (the relay counts it
			// against the event when others in the round got answers).
			results[i].Err = herald.Unavailable(herald.Ambiguous(
				fmt.Errorf("rabbitmq: no confirm by the deadline: %w", context.Cause(ctx))))
		}
	}
	return results
}

// send maps and publishes one message.
func (p *Publisher) send(ctx context.Context, s *session, m broker.Message) (*waiter, error) {
	msg, err := p.publishing(m)
	if err != nil {
		return nil, herald.Permanent(err)
	}
	return s.publish(ctx, p.cfg.Exchange, m.Destination, !p.cfg.AllowUnroutable, msg)
}

// publishing maps a message to an AMQP publishing, or says why it never
// could be sent.
func (p *Publisher) publishing(m broker.Message) (amqp.Publishing, error) {
	ev := m.Event
	if limit, source := p.limit(); len(ev.Payload) > limit {
		return amqp.Publishing{}, tooLarge(ev.ID, len(ev.Payload), limit, source)
	}
	if len(m.Destination) > 255 {
		return amqp.Publishing{}, fmt.Errorf("rabbitmq: event %s: routing key (destination) is %d bytes, AMQP allows 255", ev.ID, len(m.Destination))
	}
	headers := amqp.Table{}
	msg := amqp.Publishing{
		MessageId:    ev.ID,
		Type:         ev.Type,
		Timestamp:    ev.CreatedAt,
		DeliveryMode: amqp.Persistent,
		Body:         ev.Payload,
		Headers:      headers,
	}
	if p.cfg.Transient {
		msg.DeliveryMode = amqp.Transient
	}
	for k, v := range broker.Headers(m, HeaderPrefix, p.cfg.Source) {
		if strings.EqualFold(k, "content-type") {
			msg.ContentType = v
			continue
		}
		headers[k] = v
	}
	return msg, nil
}
