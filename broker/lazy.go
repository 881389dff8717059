package broker

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/heraldhq/herald"
)

// errClosed fails messages published after Close.
var errClosed = errors.New("broker: lazily connected publisher is closed")

// Dialer connects one broker's publisher.
type Dialer func(ctx context.Context) (Publisher, error)

// OpenLazily dials; when the broker is unreachable it returns a lazy
// publisher instead of failing, so that `herald run` starts with the broker
// down (not ready), like it does for brokers whose client reconnects by
// itself. Other errors (a bad URL, refused credentials) still fail. The
// lazy publisher reports maxPayload as its limit and dials again at each
// Publish or Ping until one succeeds.
func OpenLazily(ctx context.Context, env OpenEnv, maxPayload int, dial Dialer) (Publisher, error) {
	p, err := dial(ctx)
	if err == nil {
		return p, nil
	}
	if !herald.IsUnavailable(err) && !Unreachable(err) {
		return nil, err
	}
	env.Logger.Warn("cannot connect to the broker at start; the relay connects when it answers",
		slog.String("broker", env.Name), slog.String("error", err.Error()))
	return &lazy{dial: dial, maxPayload: maxPayload, firstErr: err}, nil
}

// lazy is a publisher whose broker was unreachable at start. Each Publish
// or Ping dials until one succeeds; until then every message fails with
// herald.Unavailable, which the relay's breaker takes as an outage.
type lazy struct {
	dial       Dialer
	maxPayload int
	firstErr   error

	mu     sync.Mutex
	p      Publisher
	closed bool
}

// connected returns the publisher, dialing it if need be.
func (l *lazy) connected(ctx context.Context) (Publisher, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errClosed
	}
	if l.p != nil {
		return l.p, nil
	}
	p, err := l.dial(ctx)
	if err != nil {
		return nil, herald.Unavailable(err)
	}
	l.p = p
	return p, nil
}

// Publish implements Publisher.
func (l *lazy) Publish(ctx context.Context, msgs []Message) []Result {
	p, err := l.connected(ctx)
	if err != nil {
		results := make([]Result, len(msgs))
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	return p.Publish(ctx, msgs)
}

// Ping implements Pinger: connected, and the inner publisher's own
// ping when it has one.
func (l *lazy) Ping(ctx context.Context) error {
	p, err := l.connected(ctx)
	if err != nil {
		return err
	}
	if pg, ok := p.(Pinger); ok {
		return pg.Ping(ctx)
	}
	return nil
}

// MaxPayload implements Limiter with the configured limit.
func (l *lazy) MaxPayload() int { return l.maxPayload }

// Close closes the publisher if it ever connected.
func (l *lazy) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.p != nil {
		return l.p.Close()
	}
	return nil
}

// DialerOf adapts a constructor of a concrete publisher type to a Dialer,
// so that a failed dial returns a nil Publisher, not a typed nil.
func DialerOf[P Publisher](open func(ctx context.Context) (P, error)) Dialer {
	return func(ctx context.Context) (Publisher, error) {
		p, err := open(ctx)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}
