package herald

import (
	"fmt"
	"slices"
	"strings"
)

// RenamedHeaderPrefix prefixes a reserved header that reached a publisher
// anyway (a row written by plain SQL): the publisher sends it as this prefix
// plus the name lower-cased, so "Ce-Id" of a forwarded CloudEvent travels
// as "x-herald-original-ce-id" and can never be read as the event's id.
const RenamedHeaderPrefix = "x-herald-original-"

// cloudEventsPrefixes are the attribute prefixes of every binding Herald
// publishes with, lower-cased: HTTP, NATS and Redis "ce-"; Kafka "ce_" (and
// RocketMQ "CE_"); AMQP "cloudEvents:" and its JMS-safe "cloudEvents_". A
// row may be relayed by any lane, so all of them are reserved on every lane.
var cloudEventsPrefixes = []string{"ce-", "ce_", "cloudevents_", "cloudevents:"}

// cloudEventsAttributes are the attributes broker.Headers sets (lower-case),
// and "contenttype", which the RocketMQ publisher sets as CE_contenttype
// from the content-type header.
var cloudEventsAttributes = []string{"specversion", "id", "type", "source", "time", "subject", "tenant", "topic", "contenttype"}

// webhookHeaders are the Standard Webhooks headers the webhook publisher sets.
var webhookHeaders = []string{"webhook-id", "webhook-timestamp", "webhook-signature"}

// traceHeaders are the W3C trace context headers: Herald carries them only
// in their lower-case spelling, the one Enqueue writes and the relay reads
// and replaces with its publish span's context.
var traceHeaders = []string{"traceparent", "tracestate"}

// ReservedHeader says why a user header named name would collide with a
// header Herald sets itself, or returns "" when the name is free. Names
// compare case-insensitively: a CloudEvents attribute under any binding's
// prefix (ce-id, Ce-Type, ce_source, cloudEvents_id …), any "Nats-" header
// (Nats-Msg-Id is the dedupe id; the server acts on others), the Standard
// Webhooks headers, and traceparent or tracestate in any spelling but the
// lower-case one. Enqueue refuses such headers; publishers rename them (see
// RenamedHeaderPrefix).
func ReservedHeader(name string) string {
	lower := strings.ToLower(name)
	for _, p := range cloudEventsPrefixes {
		if attr, ok := strings.CutPrefix(lower, p); ok && slices.Contains(cloudEventsAttributes, attr) {
			return "the CloudEvents " + attr + " attribute, which Herald sets from the event"
		}
	}
	switch {
	case strings.HasPrefix(lower, "nats-"):
		return "a NATS header (Nats-Msg-Id carries the event id; the server acts on the others)"
	case slices.Contains(webhookHeaders, lower):
		return "a Standard Webhooks header, which the webhook publisher sets"
	case slices.Contains(traceHeaders, lower) && name != lower:
		return "trace context, which Herald carries only as lower-case " + lower
	}
	return ""
}

// checkHeaders refuses empty and reserved header names, naming every
// reserved one (in sorted order, so the message is the same every time).
func checkHeaders(id string, headers map[string]string) error {
	var reserved []string
	for k := range headers {
		if k == "" {
			return fmt.Errorf("%w: event %q: a header has an empty name", ErrInvalidEvent, id)
		}
		if ReservedHeader(k) != "" {
			reserved = append(reserved, k)
		}
	}
	if len(reserved) == 0 {
		return nil
	}
	slices.Sort(reserved)
	why := make([]string, len(reserved))
	for i, k := range reserved {
		why[i] = fmt.Sprintf("%q is %s", k, ReservedHeader(k))
	}
	return fmt.Errorf("%w: event %q: %w: %s; send such a value under another name (e.g. %s%s)",
		ErrInvalidEvent, id, ErrReservedHeader, strings.Join(why, "; "), RenamedHeaderPrefix, strings.ToLower(reserved[0]))
}
