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
//
// The headers Herald sets always win. A user header named like one of them
// (herald.ReservedHeader, compared case-insensitively, under every binding's
// prefix) is refused by Enqueue; one that reaches a publisher anyway, from a
// row written by plain SQL, is sent renamed under herald.RenamedHeaderPrefix
// (Headers), so a message carries exactly one id and one type, the event's.
// Subscribers read each attribute deterministically (EventFromHeaders): the
// exact spelling prefix+name wins over other spellings.
package broker

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald"
)

// Message is one event on its way to a broker.
type Message struct {
	Event herald.Event
	// Destination is the subject, topic, routing key, stream or URL,
	// rendered from the lane's template.
	Destination string
	// Attempt counts tries of this event, this one included (1 = first).
	Attempt int
	// Replay counts the replays of this event (0: its first publication);
	// see DedupeID.
	Replay int
}

// DedupeID is the id a broker with a dedupe feature gets for m (NATS
// Nats-Msg-Id, an SQS FIFO deduplication id): the event id, and on the
// n-th replay the event id and "/replay-n". An operator who replays wants
// consumers to see the event again, also inside the broker's duplicate
// window, while retries of one publication keep one id and are still
// dropped. ce-id stays the event id, so consumers dedupe by it.
func DedupeID(m Message) string {
	if m.Replay <= 0 {
		return m.Event.ID
	}
	return m.Event.ID + "/replay-" + strconv.Itoa(m.Replay)
}

// Result is the outcome of publishing one Message.
type Result struct {
	// Receipt is the broker's answer when Err is nil.
	Receipt herald.Receipt
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
// CloudEvents attributes. Prefix is the protocol binding's attribute prefix:
// "ce-" for HTTP, NATS and Redis, "ce_" for Kafka, "CE_" for RocketMQ
// properties, and the AMQP binding's "cloudEvents:" (amqp091 adapters pass
// the JMS-safe "cloudEvents_"); each adapter's HeaderPrefix says which it
// uses.
//
// The headers Herald owns always win: a user header that is reserved
// (herald.ReservedHeader: a CloudEvents attribute under any binding's
// prefix in any case, Nats-*, the webhook signature headers, trace context
// not in lower case) — which Enqueue refuses, so it comes from a row
// written by plain SQL — is sent as herald.RenamedHeaderPrefix plus its
// name lower-cased (when two would get one name, the one that sorts first
// keeps it, and a user header of that name beats both; the others are
// dropped). A warning goes to slog.Default() on the message's first
// attempt only. So a copied "Ce-Id" travels as "x-herald-original-ce-id"
// and the message carries one id and one type, the event's.
func Headers(m Message, prefix, source string) map[string]string {
	ev := m.Event
	h := userHeaders(m, 8)
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

// UserHeaders returns a new map of the message's user headers as Headers
// sends them: reserved names renamed under herald.RenamedHeaderPrefix. It
// is for publishers that carry the CloudEvents attributes elsewhere than in
// headers (stdout writes them as JSON fields).
func UserHeaders(m Message) map[string]string { return userHeaders(m, 0) }

// userHeaders is UserHeaders with room for extra more headers.
func userHeaders(m Message, extra int) map[string]string {
	h := make(map[string]string, len(m.Event.Headers)+extra)
	var reserved []string
	for k, v := range m.Event.Headers {
		if herald.ReservedHeader(k) != "" {
			reserved = append(reserved, k)
			continue
		}
		h[k] = v
	}
	if len(reserved) > 0 {
		renameReserved(h, m, reserved)
	}
	return h
}

// renameReserved adds the reserved user headers to h under their renamed
// names. They go in sorted order and the first one to a name keeps it
// (Ce-Id and CE-ID both become x-herald-original-ce-id), so the outcome
// never depends on map order.
func renameReserved(h map[string]string, m Message, reserved []string) {
	slices.Sort(reserved)
	var renamed, dropped []string
	for _, k := range reserved {
		to := herald.RenamedHeaderPrefix + strings.ToLower(k)
		if _, taken := h[to]; taken {
			dropped = append(dropped, k)
			continue
		}
		h[to] = m.Event.Headers[k]
		renamed = append(renamed, k+" -> "+to)
	}
	// Once per event, not per retry: the row and so the warning is the
	// same on every attempt.
	if m.Attempt <= 1 {
		slog.Default().Warn("herald: event has headers named like ones Herald sets; sent renamed (Enqueue refuses them: fix the plain-SQL writer)",
			"event_id", m.Event.ID, "renamed", strings.Join(renamed, ", "), "dropped", strings.Join(dropped, ", "))
	}
}
