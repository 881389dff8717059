package rocketmq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// pingTimeout bounds one name server dial when Ping is given no deadline.
const pingTimeout = 2 * time.Second

var _ broker.Pinger = (*Publisher)(nil)

// Ping opens (and closes) a TCP connection to each configured name server
// until one answers. It sends no request. With none answering it returns
// an error wrapped with herald.Unavailable, so that a cluster down from the
// start shows as down before any event comes, and a down one is probed
// without spending an event. It implements broker.Pinger.
func (p *Publisher) Ping(ctx context.Context) error {
	return pingNameServers(ctx, p.cfg.NameServers)
}

// pingNameServers is nil when one of addrs accepts a connection.
func pingNameServers(ctx context.Context, addrs []string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, pingTimeout)
		defer cancel()
	}
	var errs []error
	for _, addr := range addrs {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", strings.TrimPrefix(addr, "http://"))
		if err == nil {
			return conn.Close()
		}
		errs = append(errs, err)
	}
	err := fmt.Errorf("rocketmq: no name server answers (%s): %w", strings.Join(addrs, ", "), errors.Join(errs...))
	if len(errs) == 0 {
		return err // no name server configured: Validate refuses that
	}
	return herald.Unavailable(err)
}

// noRouteError is a send that found no route to its topic. The client says
// the same whether the name servers are down or the topic does not exist.
type noRouteError struct{ err error }

func (e *noRouteError) Error() string { return e.err.Error() }
func (e *noRouteError) Unwrap() error { return e.err }

// noNameServer tells the two meanings of a missing route apart: with no
// name server answering, the cluster is not there (the lane's outage: the
// breaker holds the lane and no attempt is spent); with one answering, the
// route is really missing, a plain retryable failure of the event. Other
// errors pass through.
func (p *Publisher) noNameServer(ctx context.Context, err error) error {
	var nr *noRouteError
	if !errors.As(err, &nr) {
		return err
	}
	if pingErr := p.Ping(context.WithoutCancel(ctx)); pingErr != nil {
		return herald.Unavailable(fmt.Errorf("%w (%v)", nr.err, pingErr))
	}
	return nr.err
}

// routeRetries and routeRetryWait bound the re-sends of a message that
// found no route (send): a route being fetched appears within moments.
const (
	routeRetries   = 3
	routeRetryWait = 50 * time.Millisecond
)

// noRoute says the client found no route to the message's topic.
func noRoute(err error) bool { return strings.Contains(err.Error(), "route info not found") }

// sleepCtx waits d, or less if ctx ends first (then it returns false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
