// Package broker defines the seam between Herald's relay and a message
// broker: the batch Publisher, the Message it sends and the Result it gets
// back. One sub-package per broker holds its SDK; broker/brokertest is the
// conformance suite every publisher passes.
//
// # The message contract
//
// The payload is the body. The metadata travels in the broker's native
// headers following the CloudEvents binding for the protocol (Headers
// builds them): ce-specversion, ce-id (event id), ce-type (event type),
// ce-source, ce-time, ce-subject (partition key), ce-tenant (extension),
// plus the user headers (trace context included). Brokers with a dedupe or
// idempotence feature get the event id there too.
package broker

import (
	"context"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// Message is one event on its way to a broker.
type Message struct {
	Event herald.Event
	// Destination is the subject, topic, routing key, stream or URL,
	// rendered from the lane's template.
	Destination string
	// Attempt counts tries of this event, this one included (1 = first).
	Attempt int
}

// Result is the outcome of publishing one Message.
type Result struct {
	// Receipt is the broker's answer when Err is nil.
	Receipt store.Receipt
	// Err is nil when the broker accepted the message. Wrap with
	// herald.Permanent for errors no retry can fix and herald.Ambiguous when
	// the message may have been published; anything else is retried.
	Err error
}

// Publisher sends batches of messages to one broker.
//
// Publish must return exactly one Result per message, in the order given,
// and return by ctx's deadline (a message not acknowledged by then gets an
// ambiguous error). Messages with the same partition key must reach the
// broker in the order given. Publish is safe for concurrent use. Close
// flushes nothing: by the time it is called every Publish has returned, and
// it releases connections; Publish after Close fails.
type Publisher interface {
	Publish(ctx context.Context, msgs []Message) []Result
	Close() error
}

// Limiter is an optional Publisher ability: the largest payload the broker
// accepts, so payloads can be refused at enqueue and at publish.
type Limiter interface {
	MaxPayload() int
}

// Guarantees is what a broker promises, declared by each adapter and checked
// by brokertest.
type Guarantees struct {
	// Dedupe: the broker drops a message whose event id it has seen within
	// DedupeWindow (NATS Nats-Msg-Id); zero window means none.
	Dedupe       bool
	DedupeWindow time.Duration
	// KeyOrder: messages of one partition key are stored in publish order.
	KeyOrder bool
}

// SpecVersion is the CloudEvents version Herald speaks.
const SpecVersion = "1.0"

// DefaultSource is the CloudEvents source used when a lane names none.
const DefaultSource = "herald"

// Headers returns the message's headers: the user headers, then the
// CloudEvents attributes (which win over a user header of the same name).
// Prefix is the protocol binding's attribute prefix: "ce-" for HTTP, NATS
// and Redis, "ce_" for Kafka, "CE_" for RocketMQ properties, and the AMQP
// binding's "cloudEvents:" (amqp091 adapters pass the JMS-safe
// "cloudEvents_"); each adapter's HeaderPrefix says which it uses.
func Headers(m Message, prefix, source string) map[string]string {
	ev := m.Event
	h := make(map[string]string, len(ev.Headers)+8)
	for k, v := range ev.Headers {
		h[k] = v
	}
	if source == "" {
		source = DefaultSource
	}
	h[prefix+"specversion"] = SpecVersion
	h[prefix+"id"] = ev.ID
	h[prefix+"type"] = ev.Type
	h[prefix+"source"] = source
	if !ev.CreatedAt.IsZero() {
		h[prefix+"time"] = ev.CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	if ev.PartitionKey != "" {
		h[prefix+"subject"] = ev.PartitionKey
	}
	if ev.Tenant != "" {
		h[prefix+"tenant"] = ev.Tenant
	}
	h[prefix+"topic"] = ev.Topic
	return h
}
