package broker

import (
	"context"
	"strings"
	"time"

	"github.com/heraldhq/herald"
)

// Received is one message taken from a broker by a Subscriber.
type Received struct {
	// Event is the message decoded per the message contract (EventFromHeaders).
	Event herald.Event
	// Ack settles the message: the broker will not deliver it again. It is
	// called at most once per message, possibly from another goroutine and
	// in any order relative to other messages' Acks.
	Ack func(ctx context.Context) error
	// Nack hands the message back unsettled, for redelivery (to this or
	// another consumer) as soon as the broker allows. Called at most once,
	// instead of Ack.
	Nack func(ctx context.Context) error
}

// Subscriber receives messages from one broker subscription for a
// projector. Messages of one partition key come out in the order the
// broker keeps them (where it keeps an order).
//
// Receive waits until at least one message is available or ctx ends, and
// returns up to max messages; it is called from one goroutine at a time.
// A message that is neither acked nor nacked is redelivered by the broker
// after its own timeout (or when the consumer's connection ends). Close
// stops receiving and releases connections; unsettled messages are left to
// the broker's redelivery.
type Subscriber interface {
	Receive(ctx context.Context, max int) ([]Received, error)
	Close() error
}

// Rewinder is an optional Subscriber ability: start again from the first
// message the broker still has, for a projection rebuild.
type Rewinder interface {
	Rewind(ctx context.Context) error
}

// EventFromHeaders decodes a message per the message contract: the body is
// the payload, the CloudEvents attributes under prefix ("ce-") give the id,
// type, subject (partition key), tenant, time and topic, and every other
// header is a user header. A missing id is left empty for the caller to
// fill from the broker's own position.
//
// Names compare case-insensitively, and when several headers name one
// attribute the choice never depends on map order: the exact spelling
// prefix+name ("ce-id") wins, else the spelling that sorts first (byte
// order). Herald's publishers never send two (see Headers); other
// producers might.
func EventFromHeaders(headers map[string]string, prefix string, body []byte) herald.Event {
	ev := herald.Event{Payload: body}
	lowerPrefix := strings.ToLower(prefix)
	chosen := map[string]string{} // attribute -> header name read
	for k := range headers {
		name, ok := strings.CutPrefix(strings.ToLower(k), lowerPrefix)
		if !ok {
			if ev.Headers == nil {
				ev.Headers = make(map[string]string, len(headers))
			}
			ev.Headers[k] = headers[k]
			continue
		}
		if prev, seen := chosen[name]; !seen || preferred(k, prev, prefix+name) {
			chosen[name] = k
		}
	}
	for name, k := range chosen {
		setAttribute(&ev, name, headers[k])
	}
	return ev
}

// preferred reports whether header name k beats prev for the attribute
// whose exact spelling is exact.
func preferred(k, prev, exact string) bool {
	if prev == exact {
		return false
	}
	return k == exact || k < prev
}

// setAttribute sets the event field of one CloudEvents attribute; unknown
// attributes are ignored.
func setAttribute(ev *herald.Event, name, v string) {
	switch name {
	case "id":
		ev.ID = v
	case "type":
		ev.Type = v
	case "subject":
		ev.PartitionKey = v
	case "tenant":
		ev.Tenant = v
	case "topic":
		ev.Topic = v
	case "time":
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			ev.CreatedAt = t
		}
	}
}
