package config

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// errClosed fails messages published after Close.
var errClosed = errors.New("config: broker publisher is closed")

// dialer connects one broker's publisher.
type dialer func(ctx context.Context) (broker.Publisher, error)

// connectLazily dials; when the broker is unreachable it returns a lazy
// publisher instead of failing, so `herald run` starts with the broker
// down (not ready) like it does for brokers whose client reconnects by
// itself. Other errors (a bad URL, refused credentials) still fail.
func (rt *Runtime) connectLazily(ctx context.Context, name string, maxPayload int, dial dialer, log *slog.Logger) (broker.Publisher, error) {
	p, err := dial(ctx)
	if err == nil {
		rt.closers = append(rt.closers, p.Close)
		return p, nil
	}
	if !herald.IsUnavailable(err) && !broker.Unreachable(err) {
		return nil, err
	}
	log.Warn("cannot connect to the broker at start; the relay connects when it answers",
		slog.String("broker", name), slog.String("error", err.Error()))
	l := &lazy{dial: dial, maxPayload: maxPayload, firstErr: err}
	rt.closers = append(rt.closers, l.Close)
	return l, nil
}

// lazy is a publisher whose broker was unreachable at start. Each Publish
// or Ping dials until one succeeds; until then every message fails with
// herald.Unavailable, which the relay's breaker takes as an outage.
type lazy struct {
	dial       dialer
	maxPayload int
	firstErr   error

	mu     sync.Mutex
	p      broker.Publisher
	closed bool
}

// connected returns the publisher, dialing it if need be.
func (l *lazy) connected(ctx context.Context) (broker.Publisher, error) {
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

// Publish implements broker.Publisher.
func (l *lazy) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	p, err := l.connected(ctx)
	if err != nil {
		results := make([]broker.Result, len(msgs))
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	return p.Publish(ctx, msgs)
}

// Ping implements broker.Pinger: connected, and the inner publisher's own
// ping when it has one.
func (l *lazy) Ping(ctx context.Context) error {
	p, err := l.connected(ctx)
	if err != nil {
		return err
	}
	if pg, ok := p.(broker.Pinger); ok {
		return pg.Ping(ctx)
	}
	return nil
}

// MaxPayload implements broker.Limiter with the configured limit.
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
