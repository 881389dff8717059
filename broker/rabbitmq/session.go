package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// ErrUnroutable is the error of a mandatory message the broker returned
// because no queue is bound for its routing key. It is retryable: binding a
// queue fixes it.
var ErrUnroutable = errors.New("rabbitmq: message returned unroutable (no queue bound for the routing key)")

// ErrNacked is the error of a message the broker refused to take
// responsibility for (basic.nack). It is retryable.
var ErrNacked = errors.New("rabbitmq: broker nacked the message")

// session is one connection with one confirm-mode channel. A single
// dispatcher goroutine receives both returns and confirms: the broker sends
// a mandatory message's basic.return before its basic.ack and the client
// library hands them over one after the other from its reader goroutine, so
// by the time the dispatcher sees a confirm it has seen that message's
// return. (Two goroutines, or DeferredConfirmation plus a return listener,
// would race.)
type session struct {
	conn *amqp.Connection
	ch   *amqp.Channel

	pubMu sync.Mutex // serialises publishes, so seq numbers match tags

	mu       sync.Mutex
	pending  map[uint64]*waiter // by delivery tag
	returned map[string]amqp.Return
	dead     atomic.Bool
	blocked  atomic.Bool   // the broker blocked publishing (resource alarm)
	done     chan struct{} // closed when the dispatcher exits
	// closes tells why the server closed the channel; refused is where a
	// limit it named on refusing a message is kept (the Publisher's).
	closes  chan *amqp.Error
	refused *atomic.Int64
}

// waiter is one published message waiting for its confirm.
type waiter struct {
	msgID string
	size  int // of the body
	err   error
	done  chan struct{}
}

// dial opens a connection and a confirm-mode channel, checks the exchange
// exists and starts the dispatcher.
func dial(ctx context.Context, cfg Config, refused *atomic.Int64) (*session, error) {
	dialer := &net.Dialer{Timeout: cfg.DialTimeout}
	conn, err := amqp.DialConfig(cfg.URL, amqp.Config{
		Heartbeat: cfg.Heartbeat,
		Dial: func(network, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		},
		Properties: amqp.Table{"connection_name": "herald"},
	})
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: connect to %s: %w", cfg.redactedHost(), redactErr(err))
	}
	s, err := openChannel(conn, cfg, refused)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

func openChannel(conn *amqp.Connection, cfg Config, refused *atomic.Int64) (*session, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: open channel: %w", err)
	}
	if cfg.Exchange != "" {
		// Passive: fail clearly on a missing exchange instead of losing
		// the channel (404) on the first publish.
		if err := ch.ExchangeDeclarePassive(cfg.Exchange, "", false, false, false, false, nil); err != nil {
			return nil, fmt.Errorf("rabbitmq: exchange: %q: %w", cfg.Exchange, err)
		}
	}
	if err := ch.Confirm(false); err != nil {
		return nil, fmt.Errorf("rabbitmq: enable publisher confirms: %w", err)
	}
	s := &session{
		conn: conn, ch: ch,
		pending:  map[uint64]*waiter{},
		returned: map[string]amqp.Return{},
		done:     make(chan struct{}),
		// The client sends the close before it closes confirms, and the
		// buffer keeps it for fail.
		closes:  ch.NotifyClose(make(chan *amqp.Error, 1)),
		refused: refused,
	}
	// While a resource alarm blocks the connection the broker stops
	// reading, and a publish would hang in the socket write past the
	// batch deadline: refuse instead, retryably.
	blocking := conn.NotifyBlocked(make(chan amqp.Blocking, 1))
	go func() {
		for b := range blocking {
			s.blocked.Store(b.Active)
		}
	}()
	returns := ch.NotifyReturn(make(chan amqp.Return, 1))
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 64))
	go s.dispatch(returns, confirms)
	return s, nil
}

// dispatch resolves waiters until the channel closes, then fails the rest.
func (s *session) dispatch(returns <-chan amqp.Return, confirms <-chan amqp.Confirmation) {
	defer close(s.done)
	for {
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil // keep draining confirms until they close
				continue
			}
			s.mu.Lock()
			s.returned[r.MessageId] = r
			s.mu.Unlock()
		case c, ok := <-confirms:
			if !ok {
				s.fail()
				return
			}
			s.resolve(c)
		}
	}
}

func (s *session) resolve(c amqp.Confirmation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.pending[c.DeliveryTag]
	if !ok {
		return
	}
	delete(s.pending, c.DeliveryTag)
	if r, ok := s.returned[w.msgID]; ok {
		delete(s.returned, w.msgID)
		w.err = fmt.Errorf("%w: %d %s", ErrUnroutable, r.ReplyCode, r.ReplyText)
	} else if !c.Ack {
		w.err = ErrNacked
	}
	close(w.done)
}

// fail marks the session dead and fails every unconfirmed message as
// ambiguous: the broker may have routed it before the channel went away.
// When the server closed the channel because a message was over its
// max_message_size, the messages over that limit fail permanently instead
// (no retry can deliver them) and the limit is kept for the next checks.
func (s *session) fail() {
	s.dead.Store(true)
	limit := 0
	select {
	case e := <-s.closes:
		limit = refusedLimit(e)
	default:
	}
	if limit > 0 {
		s.refused.Store(int64(limit))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for tag, w := range s.pending {
		if limit > 0 && w.size > limit {
			w.err = herald.Permanent(tooLarge(w.msgID, w.size, limit, "the server's max_message_size"))
		} else {
			w.err = herald.Unavailable(herald.Ambiguous(errors.New("rabbitmq: channel closed before the broker confirmed")))
		}
		close(w.done)
		delete(s.pending, tag)
	}
	// The channel is gone; drop the connection too, a new session dials.
	go s.conn.Close()
}

// lost says the session can no longer publish. It asks the channel and the
// connection too: the client marks them closed as soon as its reader sees
// the socket go, a moment before the dispatcher hears of it and sets dead,
// and a publish in that moment would fail although a new session would
// carry it.
func (s *session) lost() bool {
	return s.dead.Load() || s.ch.IsClosed() || s.conn.IsClosed()
}

// publish sends one message and returns its waiter, or a retryable error
// if the channel refused it before sending.
func (s *session) publish(ctx context.Context, exchange, key string, mandatory bool, msg amqp.Publishing) (*waiter, error) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	if s.dead.Load() {
		return nil, herald.Unavailable(errors.New("rabbitmq: not sent: connection lost"))
	}
	if s.blocked.Load() {
		// A resource alarm blocks every publisher: the broker's state.
		return nil, herald.Unavailable(errors.New("rabbitmq: not sent: the broker blocked publishing (resource alarm: memory or disk)"))
	}
	w := &waiter{msgID: msg.MessageId, size: len(msg.Body), done: make(chan struct{})}
	tag := s.ch.GetNextPublishSeqNo()
	s.mu.Lock()
	s.pending[tag] = w
	s.mu.Unlock()
	if err := s.ch.PublishWithContext(ctx, exchange, key, mandatory, false, msg); err != nil {
		s.mu.Lock()
		delete(s.pending, tag)
		s.mu.Unlock()
		err = fmt.Errorf("rabbitmq: not sent: %w", err)
		if errors.Is(err, amqp.ErrClosed) || broker.Unreachable(err) {
			err = herald.Unavailable(err)
		}
		return nil, err
	}
	return w, nil
}

// close closes the connection and waits for the dispatcher.
func (s *session) close() error {
	err := s.conn.Close()
	<-s.done
	if errors.Is(err, amqp.ErrClosed) {
		err = nil
	}
	return err
}

// redactErr keeps URL parse errors, which may quote the URL, out of errors.
func redactErr(err error) error {
	var ue interface{ URL() string }
	if errors.As(err, &ue) {
		return errors.New("invalid url")
	}
	return err
}
