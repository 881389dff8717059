// Package brokertest is the conformance suite every broker.Publisher passes.
//
// An adapter's test calls Run with a Target: how to make an isolated
// publisher, how to read back what the broker stored, and what the broker
// promises. The suite then checks, one file per area, each failure naming
// its rule:
//
//   - batch: one Result per message, in order; empty batches; concurrent
//     Publish calls (batch.go).
//   - contract: the payload is the body; the CloudEvents headers (ce-id,
//     ce-type, ce-source, ce-time, ce-subject, ce-tenant), user headers and
//     traceparent round-trip; the event id is in the broker's message-id or
//     dedupe field; with Dedupe, a republished event id is stored once,
//     without it twice and never reported as a duplicate (contract.go); user headers copied from an incoming CloudEvent
//     (Ce-Id, CE-TYPE … under the adapter's prefix) neither duplicate nor
//     replace the event's id and type, and travel renamed (collide.go).
//   - order: per-key order within and across batches; a message that fails
//     unsent holds back the later messages of its key in the batch (order.go).
//   - limits: a payload of MaxPayload bytes is accepted, one byte more is a
//     permanent herald.ErrPayloadTooLarge (limits.go).
//   - outage: with Stop/Start hooks, a publish to a stopped broker returns
//     non-permanent errors by ctx's deadline and works again after the
//     broker is back (outage.go).
//   - close: Close returns nil, publishes after Close fail, no goroutine
//     outlives the publisher (close.go).
//
// Subtests run one after another: each gets its own Setup (and so its own
// stream, topic or queue), which keeps them independent of each other and
// of other runs against the same server.
package brokertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// Target describes one publisher under test.
type Target struct {
	// New returns a fresh, isolated Setup for one subtest. It registers its
	// own cleanup (t.Cleanup), which must stop everything it started.
	New func(t *testing.T) *Setup
	// Guarantees are what the adapter declares; the suite checks them.
	Guarantees broker.Guarantees
	// ReportsDuplicates: with Dedupe, a publish the broker dropped as a
	// duplicate gets Receipt.Duplicate = true.
	ReportsDuplicates bool
	// MessageID: the broker has a native message id (NATS Nats-Msg-Id,
	// AMQP message-id) and Received.MessageID carries it; it must be the
	// event id.
	MessageID bool
	// Key: the broker has a record key (Kafka) and Received.Key carries it;
	// it must be the partition key.
	Key bool
	// HeaderPrefix is the CloudEvents attribute prefix the adapter uses.
	// Defaults to "ce-".
	HeaderPrefix string
	// Source is the CloudEvents source the publisher was configured with.
	// Defaults to broker.DefaultSource.
	Source string
	// MaxPayload is the broker's payload limit when the publisher is not a
	// broker.Limiter (zero: no limit, the limits test is skipped).
	MaxPayload int
	// PublishTimeout bounds each Publish call of the suite. Defaults to 10s.
	PublishTimeout time.Duration
	// IgnoreGoroutines are goleak options for goroutines a third-party
	// client leaves behind by design (the RocketMQ client's schedulers sleep
	// up to 10s after Shutdown). Only for goroutines that are not the
	// adapter's own.
	IgnoreGoroutines []goleak.Option
}

// Setup is one isolated publisher and the means to inspect its broker.
type Setup struct {
	// Publisher is the publisher under test. The suite closes it; Close
	// must tolerate being called again by the target's own cleanup.
	Publisher broker.Publisher
	// Destination returns a destination (subject, topic, routing key)
	// unique to this Setup for a short name the suite picks.
	Destination func(name string) string
	// Read returns what the broker stored for destination, in the broker's
	// order. It waits until at least want messages are there or a deadline
	// of a few seconds passes, then returns what it has.
	Read func(t *testing.T, destination string, want int) []Received
	// Stop and Start, when both set, stop the broker and start it again
	// (same address, same data) for the outage test.
	Stop  func(t *testing.T)
	Start func(t *testing.T)
}

// Received is one message as the broker stored it.
type Received struct {
	// Destination is where it was stored (subject, topic, routing key).
	Destination string
	// Headers are the broker-native headers, names as the broker gives them
	// (the suite compares names case-insensitively).
	Headers map[string]string
	// Body is the message body.
	Body []byte
	// MessageID is the broker's message-id or dedupe field, if it has one.
	MessageID string
	// Key is the broker's record key, if it has one.
	Key string
}

// Run runs the whole suite against target.
func Run(t *testing.T, target Target) {
	t.Helper()
	target = target.withDefaults()
	t.Run("batch", func(t *testing.T) { testBatch(t, target) })
	t.Run("contract", func(t *testing.T) { testContract(t, target) })
	t.Run("order", func(t *testing.T) { testOrder(t, target) })
	t.Run("limits", func(t *testing.T) { testLimits(t, target) })
	t.Run("outage", func(t *testing.T) { testOutage(t, target) })
	t.Run("close", func(t *testing.T) { testClose(t, target) })
}

func (tg Target) withDefaults() Target {
	if tg.HeaderPrefix == "" {
		tg.HeaderPrefix = "ce-"
	}
	if tg.Source == "" {
		tg.Source = broker.DefaultSource
	}
	if tg.PublishTimeout <= 0 {
		tg.PublishTimeout = 10 * time.Second
	}
	return tg
}

// publish calls Publish under the target's timeout and checks the first
// rule of all: one result per message.
func (tg Target) publish(t *testing.T, s *Setup, msgs []broker.Message) []broker.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tg.PublishTimeout)
	defer cancel()
	res := s.Publisher.Publish(ctx, msgs)
	if len(res) != len(msgs) {
		t.Fatalf("[rule batch.one-result-per-message] Publish of %d messages returned %d results", len(msgs), len(res))
	}
	return res
}

// requireOK fails the test, naming rule, for every result with an error.
func requireOK(t *testing.T, rule string, res []broker.Result) {
	t.Helper()
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("[rule %s] result %d: unexpected error: %v", rule, i, r.Err)
		}
	}
}

// suffix returns a short random string to keep names unique across runs.
func suffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// message builds a message for dest with partition key key; its payload
// names its key and index so order checks can read them back.
func message(dest, key string, i int) broker.Message {
	ev := herald.Event{
		ID:           herald.NewID(),
		Tenant:       "tenant-a",
		Topic:        "room",
		Type:         "RoomEvent",
		PartitionKey: key,
		Payload:      fmt.Appendf(nil, `{"key":%q,"i":%d}`, key, i),
		CreatedAt:    time.Now().UTC().Truncate(time.Millisecond),
	}
	return broker.Message{Event: ev, Destination: dest, Attempt: 1}
}

// headerMap lowercases header names, for case-insensitive lookups.
func headerMap(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[strings.ToLower(k)] = v
	}
	return out
}

// byEventID indexes received messages by their ce-id header.
func (tg Target) byEventID(recv []Received) map[string][]Received {
	out := map[string][]Received{}
	for _, r := range recv {
		id := headerMap(r.Headers)[strings.ToLower(tg.HeaderPrefix)+"id"]
		out[id] = append(out[id], r)
	}
	return out
}
