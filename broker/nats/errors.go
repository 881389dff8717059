package nats

import (
	"errors"
	"fmt"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// classifySend sorts an error from handing a message to the connection.
// Nothing was sent, so nothing here is ambiguous.
func classifySend(m broker.Message, err error) error {
	id, subj := m.Event.ID, m.Destination
	switch {
	case errors.Is(err, natsgo.ErrMaxPayload):
		return herald.Permanent(fmt.Errorf("%w: nats: event %s: payload is %d bytes, over the server's max_payload: %w",
			herald.ErrPayloadTooLarge, id, len(m.Event.Payload), err))
	case errors.Is(err, natsgo.ErrBadSubject), errors.Is(err, natsgo.ErrBadHeaderMsg):
		return herald.Permanent(fmt.Errorf("nats: event %s: invalid subject %q or headers: %w", id, subj, err))
	case errors.Is(err, jetstream.ErrTooManyStalledMsgs):
		return fmt.Errorf("nats: event %s not sent: too many messages awaiting acks (MaxPending): %w", id, err)
	case connectionGone(err):
		return herald.Unavailable(fmt.Errorf("nats: event %s to %s not sent: %w", id, subj, err))
	default:
		return fmt.Errorf("nats: event %s to %s not sent: %w", id, subj, err)
	}
}

// classifyAck sorts an error that came instead of an ack: the message was
// sent, so anything not known to be a refusal is ambiguous.
func classifyAck(m broker.Message, err error) error {
	id, subj := m.Event.ID, m.Destination
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrNoStreamResponse):
		// No responders: nothing listens on the subject, so nothing stored.
		// The stream (or its server) is not there: the lane's state, not
		// this event's fault.
		return herald.Unavailable(fmt.Errorf("nats: event %s: no stream covers subject %q (no responders): create the stream or set create_stream, or, on a cluster, start the stream's replicas: %w", id, subj, err))
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum:
		return herald.Permanent(fmt.Errorf("%w: nats: event %s: payload is %d bytes, over the stream's max_msg_size: %w",
			herald.ErrPayloadTooLarge, id, len(m.Event.Payload), err))
	case errors.As(err, &apiErr) && apiErr.Code == 503:
		// No stream leader, JetStream temporarily unavailable: nothing
		// stored, and no answer about this event.
		return herald.Unavailable(fmt.Errorf("nats: event %s on %s: stream unavailable: %w", id, subj, err))
	case errors.As(err, &apiErr):
		// The stream refused it (limits, no space, wrong sequence): not
		// stored, and a later try may succeed.
		return fmt.Errorf("nats: event %s on %s refused by the stream: %w", id, subj, err)
	case errors.Is(err, jetstream.ErrAsyncPublishTimeout):
		return herald.Ambiguous(fmt.Errorf("nats: event %s on %s: no ack in time: %w", id, subj, err))
	case connectionGone(err):
		// Disconnected after sending: it may be stored, and the server is
		// not there.
		return herald.Unavailable(herald.Ambiguous(fmt.Errorf("nats: event %s on %s: %w", id, subj, err)))
	default:
		// Anything unknown: it may be stored.
		return herald.Ambiguous(fmt.Errorf("nats: event %s on %s: %w", id, subj, err))
	}
}

// connectionGone reports whether err says the connection to the server is
// down (closed, reconnecting, no servers, no responders) or the network
// failed under it.
func connectionGone(err error) bool {
	return errors.Is(err, natsgo.ErrConnectionClosed) || errors.Is(err, natsgo.ErrConnectionReconnecting) ||
		errors.Is(err, natsgo.ErrDisconnected) || errors.Is(err, natsgo.ErrNoServers) ||
		errors.Is(err, natsgo.ErrNoResponders) || errors.Is(err, natsgo.ErrTimeout) || broker.Unreachable(err)
}
