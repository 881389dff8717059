package broker

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/heraldhq/herald"
)

// ErrHeldBack is wrapped by the error of a message an adapter did not send
// because an earlier message of its partition key failed in the batch. It
// says nothing about the broker: the relay neither opens nor closes the
// broker's breaker on it.
var ErrHeldBack = errors.New("not sent")

// Unreachable reports whether err says the broker could not be reached at
// all: a refused, reset or broken connection, a connection closed under
// the client, an address that does not resolve, or a network timeout (no
// answer). Adapters use it at their edge to wrap such errors with
// herald.Unavailable; errors the broker sent back are not among them.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, net.ErrClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && (op.Op == "dial" || op.Timeout()) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && !errors.Is(err, context.Canceled)
}

// MarkUnreachable wraps err with herald.Unavailable when Unreachable(err),
// and returns it unchanged otherwise.
func MarkUnreachable(err error) error {
	if Unreachable(err) {
		return herald.Unavailable(err)
	}
	return err
}

// Pinger is an optional Publisher ability: a cheap check that the broker
// is reachable, without sending an event. The relay pings at start (so a
// broker down from the start shows as down before any event comes) and
// when probing a down broker finds no event to probe with. Ping returns an
// error wrapped with herald.Unavailable when the broker is not there.
type Pinger interface {
	Ping(ctx context.Context) error
}

// DestinationPinger is an optional Publisher ability for brokers whose
// address is in the lane's destination (webhooks): a cheap check that the
// endpoint dest names is reachable, without sending an event. It returns
// nil when it cannot tell (the address depends on the event), and an error
// wrapped with herald.Unavailable when the endpoint is not there. The relay
// uses it like Pinger, with the destination of the broker's first lane.
type DestinationPinger interface {
	PingDestination(ctx context.Context, dest Template) error
}
