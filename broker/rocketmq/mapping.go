package rocketmq

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// HeaderPrefix is the CloudEvents RocketMQ binding's property prefix.
const HeaderPrefix = "CE_"

// contentTypeProperty carries the event's content type, per the binding.
const contentTypeProperty = HeaderPrefix + "contenttype"

// Mapped is a message as RocketMQ will get it, before it becomes the SDK's
// primitive.Message: Map builds it, so the mapping is tested without a
// broker.
type Mapped struct {
	Topic string
	// Tag is the constant tag, the event type or a header's value, per
	// Config.TagMode.
	Tag string
	// Keys are the event id, then the values of Config.KeyHeaders.
	Keys []string
	// ShardingKey is the partition key: the producer's hash queue selector
	// puts one key on one queue, which keeps its order.
	ShardingKey string
	// Properties are the CloudEvents attributes (CE_ prefix) and the user
	// headers.
	Properties map[string]string
	// Body is the payload or the JSON envelope.
	Body []byte
}

// Envelope is the body in BodyEnvelope mode. Payload is the event payload
// as JSON when it is valid JSON, else as a JSON string (it must then be
// valid UTF-8).
type Envelope struct {
	Tenant     string          `json:"tenant"`
	EventID    string          `json:"event_id"`
	EventType  string          `json:"event_type"`
	OccurredAt string          `json:"occurred_at,omitempty"`
	Payload    json.RawMessage `json:"payload"`
}

// reserved are the RocketMQ system properties a user header must not
// overwrite (the client and broker read them).
var reserved = map[string]bool{
	"KEYS": true, "TAGS": true, "WAIT": true, "DELAY": true, "RETRY_TOPIC": true,
	"TIMER_DELIVER_MS": true, "REAL_TOPIC": true, "REAL_QID": true, "TRAN_MSG": true,
	"PGROUP": true, "MIN_OFFSET": true, "MAX_OFFSET": true, "BUYER_ID": true,
	"ORIGIN_MESSAGE_ID": true, "TRANSFER_FLAG": true, "CORRECTION_FLAG": true,
	"MQ2_FLAG": true, "RECONSUME_TIME": true, "MSG_REGION": true, "TRACE_ON": true,
	"UNIQ_KEY": true, "MAX_RECONSUME_TIMES": true, "CONSUME_START_TIME": true,
	"TRAN_PREPARED_QUEUE_OFFSET": true, "TRANSACTION_CHECK_TIMES": true,
	"CHECK_IMMUNITY_TIME_IN_SECONDS": true, "SHARDING_KEY": true, "__transactionId__": true,
	"CORRELATION_ID": true, "REPLY_TO_CLIENT": true, "TTL": true, "ARRIVE_TIME": true,
	"MSG_TYPE": true, "CLUSTER": true, "INSTANCE_ID": true,
}

// Map turns a message into what RocketMQ gets, or returns a permanent error
// naming why it never could be sent. cfg must have passed Validate.
func Map(cfg Config, m broker.Message) (Mapped, error) {
	ev := m.Event
	if m.Destination == "" {
		return Mapped{}, herald.Permanent(fmt.Errorf("rocketmq: event %s: the topic (destination) is empty", ev.ID))
	}
	out := Mapped{Topic: m.Destination, ShardingKey: ev.PartitionKey, Keys: keys(cfg, ev)}
	tag, err := tagOf(cfg, ev)
	if err != nil {
		return Mapped{}, herald.Permanent(fmt.Errorf("rocketmq: event %s: %w", ev.ID, err))
	}
	out.Tag = tag
	props, err := properties(cfg, m)
	if err != nil {
		return Mapped{}, herald.Permanent(err)
	}
	out.Properties = props
	if out.Body, err = body(cfg, ev); err != nil {
		return Mapped{}, herald.Permanent(err)
	}
	if len(out.Body) > cfg.MaxPayload {
		what := "payload"
		if cfg.Body == BodyEnvelope {
			what = "envelope"
		}
		return Mapped{}, fmt.Errorf("%w: rocketmq: event %s: %s is %d bytes, the limit (max_payload) is %d",
			herald.ErrPayloadTooLarge, ev.ID, what, len(out.Body), cfg.MaxPayload)
	}
	return out, nil
}

// tagOf returns the event's tag per cfg.TagMode.
func tagOf(cfg Config, ev herald.Event) (string, error) {
	switch cfg.TagMode {
	case TagEventType:
		if err := checkTag(ev.Type); err != nil {
			return "", fmt.Errorf("event type as tag: %w", err)
		}
		return ev.Type, nil
	case TagHeader:
		tag := ev.Headers[cfg.TagHeader]
		if tag == "" {
			return "", fmt.Errorf("header %s (tag_header) is missing or empty", cfg.TagHeader)
		}
		if err := checkTag(tag); err != nil {
			return "", fmt.Errorf("header %s as tag: %w", cfg.TagHeader, err)
		}
		return tag, nil
	}
	return cfg.Tag, nil
}

// keys returns the event id and the configured headers' values.
func keys(cfg Config, ev herald.Event) []string {
	ks := []string{ev.ID}
	for _, h := range cfg.KeyHeaders {
		if v := ev.Headers[h]; v != "" {
			ks = append(ks, v)
		}
	}
	return ks
}

// properties builds the user properties, refusing system names.
func properties(cfg Config, m broker.Message) (map[string]string, error) {
	h := broker.Headers(m, HeaderPrefix, cfg.Source)
	props := make(map[string]string, len(h))
	for k, v := range h {
		if strings.EqualFold(k, "content-type") {
			props[contentTypeProperty] = v
			continue
		}
		if reserved[k] {
			return nil, fmt.Errorf("rocketmq: event %s: header %q is a RocketMQ system property", m.Event.ID, k)
		}
		props[k] = v
	}
	return props, nil
}

// body returns the payload or its envelope.
func body(cfg Config, ev herald.Event) ([]byte, error) {
	if cfg.Body == BodyRaw {
		return ev.Payload, nil
	}
	payload := json.RawMessage(ev.Payload)
	if !json.Valid(ev.Payload) {
		if !utf8.Valid(ev.Payload) {
			return nil, fmt.Errorf("rocketmq: event %s: body %q needs a JSON or UTF-8 payload", ev.ID, BodyEnvelope)
		}
		payload, _ = json.Marshal(string(ev.Payload)) // a string cannot fail
	}
	env := Envelope{Tenant: ev.Tenant, EventID: ev.ID, EventType: ev.Type, Payload: payload}
	if !ev.CreatedAt.IsZero() {
		env.OccurredAt = ev.CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	b, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("rocketmq: event %s: envelope: %w", ev.ID, err)
	}
	return b, nil
}
