package herald

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Event is one domain fact written to the outbox and published to a broker.
//
// Only Topic, Type and Payload are required. ID defaults to a new UUIDv7,
// AvailableAt to "now" on the database clock. Enqueueing an ID that is
// already in the outbox is a no-op.
type Event struct {
	// ID is the event id: the dedupe key everywhere downstream
	// (CloudEvents ce-id, NATS Nats-Msg-Id, RabbitMQ message-id).
	ID string
	// Tenant scopes the event to one application or customer (app_code).
	Tenant string
	// Topic is a coarse routing name; lanes may use it in destination templates.
	Topic string
	// Type is the event type, e.g. "WalletGiftDebited" (CloudEvents ce-type).
	Type string
	// PartitionKey orders events: with ordering "key" on a lane, events of one
	// key reach the broker in commit order. Empty means unordered.
	PartitionKey string
	// Headers are user headers (string to string), trace context included.
	// Names Herald sets itself on published messages (CloudEvents
	// attributes under any binding's prefix, Nats-*, ...; see
	// ReservedHeader) are refused with ErrReservedHeader.
	Headers map[string]string
	// Payload is the body, published as is.
	Payload []byte
	// AvailableAt delays delivery until that instant. Zero means now.
	AvailableAt time.Time
	// CreatedAt is set by the store when the event is read back; ignored on enqueue.
	CreatedAt time.Time
}

// NewID returns a new event id: a UUIDv7, so ids sort roughly by creation time.
func NewID() string {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only when the system's random source fails; fall back
		// to v4, which fails the same way, so panic with a clear reason.
		panic(fmt.Sprintf("herald: cannot generate an event id: %v", err))
	}
	return id.String()
}

// validate checks the fields that every store needs, naming the field at fault.
func (e *Event) validate(maxPayload int) error {
	switch {
	case e.Topic == "":
		return fmt.Errorf("%w: event %q: topic is empty", ErrInvalidEvent, e.ID)
	case e.Type == "":
		return fmt.Errorf("%w: event %q: type is empty", ErrInvalidEvent, e.ID)
	case len(e.ID) > 64:
		return fmt.Errorf("%w: event id %q is longer than 64 bytes", ErrInvalidEvent, e.ID)
	case maxPayload > 0 && len(e.Payload) > maxPayload:
		return fmt.Errorf("%w: event %q: payload is %d bytes, the limit is %d",
			ErrPayloadTooLarge, e.ID, len(e.Payload), maxPayload)
	}
	return checkHeaders(e.ID, e.Headers)
}

// Receipt is the broker's answer for a delivered event, kept on its row by
// the store and returned by publishers in broker.Result.
type Receipt struct {
	// Stream and Sequence: NATS JetStream, Redis Streams (entry id in MessageID).
	Stream   string `json:"stream,omitempty"`
	Sequence uint64 `json:"seq,omitempty"`
	// Partition and Offset: Kafka.
	Partition int32 `json:"partition,omitempty"`
	Offset    int64 `json:"offset,omitempty"`
	// MessageID: RabbitMQ, RocketMQ, Redis, webhooks, SQS and SNS (their
	// message id), Kinesis (the record's sequence number, with Shard).
	MessageID string `json:"message_id,omitempty"`
	// Shard: Kinesis, the shard that stored the record.
	Shard string `json:"shard,omitempty"`
	// Duplicate is true when the broker said it had the message already.
	Duplicate bool `json:"duplicate,omitempty"`
	// Replay counts the replays of the event (0: never replayed). A replay
	// sets it on the row and the relay keeps it on delivery, so that each
	// replay gets a dedupe id of its own (broker.DedupeID) and is not
	// dropped inside a broker's duplicate window.
	Replay int `json:"replay,omitempty"`
}

// JSON returns the receipt as stored in the receipt column.
func (r Receipt) JSON() string {
	b, _ := json.Marshal(r) // cannot fail: plain fields
	return string(b)
}
