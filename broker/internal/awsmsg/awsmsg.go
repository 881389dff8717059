// Package awsmsg maps an event onto an SQS or SNS message and back: the
// payload is the body, the CloudEvents attributes and user headers are
// message attributes of type String. Both services carry at most 10
// attributes a message, take only text in a body or an attribute, and
// restrict attribute names, so what does not fit travels in two attributes
// of Herald's own: the user headers as one JSON object (PackedHeaders), and
// a body that is not text as base64 (BodyEncoding). Decode undoes both.
package awsmsg

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// HeaderPrefix is the CloudEvents attribute prefix: "ce-" as in the HTTP
// binding (SQS and SNS have no CloudEvents binding of their own).
const HeaderPrefix = "ce-"

// MaxAttributes is how many message attributes SQS and SNS carry.
const MaxAttributes = 10

// PackedHeaders is the attribute that carries the user headers as a JSON
// object when they do not fit as attributes of their own (too many, a name
// the services refuse, an empty value).
const PackedHeaders = "herald-headers"

// BodyEncoding is the attribute set to "base64" when the payload is not
// text the services accept (it is sent base64-encoded).
const BodyEncoding = "herald-body-encoding"

// DataType is the message attributes' type.
const DataType = "String"

// Message is an event as SQS or SNS takes it.
type Message struct {
	Body       string
	Attributes map[string]string
}

// Size is the message's size as the services count it against their
// limit: the body, and each attribute's name, type and value.
func (m Message) Size() int {
	n := len(m.Body)
	for k, v := range m.Attributes {
		n += len(k) + len(DataType) + len(v)
	}
	return n
}

// ownAttributes are the CloudEvents attributes Headers sets (a user
// header of such a name is sent renamed).
var ownAttributes = []string{"specversion", "id", "type", "source", "time", "subject", "tenant", "topic"}

// Split returns the message's CloudEvents attributes by bare name ("id")
// and its user headers (reserved ones renamed), as broker.Headers gives
// them, for services whose messages carry them otherwise than as headers.
func Split(m broker.Message, source string) (own, user map[string]string) {
	user = broker.Headers(m, HeaderPrefix, source)
	own = make(map[string]string, len(ownAttributes))
	for _, name := range ownAttributes {
		if v, ok := user[HeaderPrefix+name]; ok {
			own[name] = v
			delete(user, HeaderPrefix+name)
		}
	}
	return own, user
}

// Encode maps m onto a message, with source as the CloudEvents source.
func Encode(m broker.Message, source string) Message {
	own, user := Split(m, source)
	attrs := make(map[string]string, len(own)+len(user))
	for name, v := range own {
		attrs[HeaderPrefix+name] = v
	}
	out := Message{Attributes: attrs}
	if Text(m.Event.Payload) {
		out.Body = string(m.Event.Payload)
	} else {
		out.Body = base64.StdEncoding.EncodeToString(m.Event.Payload)
		attrs[BodyEncoding] = "base64"
	}
	if len(user) == 0 {
		return out
	}
	if len(attrs)+len(user) <= MaxAttributes && fitAsAttributes(user) {
		for k, v := range user {
			attrs[k] = v
		}
		return out
	}
	packed, _ := json.Marshal(user) // a map of strings cannot fail
	attrs[PackedHeaders] = string(packed)
	return out
}

// fitAsAttributes reports whether every user header can be an attribute
// of its own: a name the services accept, a non-empty text value.
func fitAsAttributes(user map[string]string) bool {
	for k, v := range user {
		if !ValidName(k) || v == "" || !Text([]byte(v)) {
			return false
		}
	}
	return true
}

// ValidName reports whether SQS and SNS accept name as an attribute name:
// up to 256 of a-z, A-Z, 0-9, '-', '_', '.', no leading, trailing or
// doubled period, not starting with AWS. or Amazon. in any case.
func ValidName(name string) bool {
	if name == "" || len(name) > 256 || name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, "..") {
		return false
	}
	lower := strings.ToLower(name)
	if strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon.") {
		return false
	}
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// Text reports whether b is text SQS and SNS take as a body or value:
// UTF-8 of the characters #x9, #xA, #xD, #x20 to #xD7FF, #xE000 to
// #xFFFD and #x10000 to #x10FFFF.
func Text(b []byte) bool {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			return false
		}
		switch {
		case r == 0x9, r == 0xA, r == 0xD, r >= 0x20 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000:
		default:
			return false
		}
		b = b[size:]
	}
	return true
}

// Decode reads an event from a message's attributes and body per the
// message contract, undoing Encode's packing and base64.
func Decode(attrs map[string]string, body string) (herald.Event, error) {
	h := make(map[string]string, len(attrs))
	for k, v := range attrs {
		if k != PackedHeaders && k != BodyEncoding {
			h[k] = v
		}
	}
	if packed, ok := attrs[PackedHeaders]; ok {
		var user map[string]string
		if err := json.Unmarshal([]byte(packed), &user); err != nil {
			return herald.Event{}, fmt.Errorf("attribute %s: %w", PackedHeaders, err)
		}
		for k, v := range user {
			if _, taken := h[k]; !taken {
				h[k] = v
			}
		}
	}
	payload := []byte(body)
	if attrs[BodyEncoding] == "base64" {
		var err error
		if payload, err = base64.StdEncoding.DecodeString(body); err != nil {
			return herald.Event{}, fmt.Errorf("body marked base64: %w", err)
		}
	}
	return broker.EventFromHeaders(h, HeaderPrefix, payload), nil
}

// TooLarge is the error of a message over a limit: its payload over the
// announced one, or its whole size over the service's.
func TooLarge(service, id string, payload, size, limit int, which string) error {
	if size == payload {
		return fmt.Errorf("%w: %s: event %s: payload is %d bytes, the limit (%s) is %d",
			herald.ErrPayloadTooLarge, service, id, payload, which, limit)
	}
	return fmt.Errorf("%w: %s: event %s: payload is %d bytes, %d with its encoding and attributes; the limit (%s) is %d",
		herald.ErrPayloadTooLarge, service, id, payload, size, which, limit)
}

// Outgoing is one message ready for SQS or SNS.
type Outgoing struct {
	Message
	// Group and Dedup are the MessageGroupId and MessageDeduplicationId
	// of a message to a FIFO queue or topic; empty otherwise.
	Group, Dedup string
}

// Limits are what an outgoing message is checked against.
type Limits struct {
	// Service names the adapter in errors: "sqs", "sns".
	Service string
	// MaxPayload is the announced payload limit (max_payload).
	MaxPayload int
	// MaxSize is the service's limit on the whole message, and SizeName
	// what sets it ("the queue's MaximumMessageSize").
	MaxSize  int
	SizeName string
	// FIFO: the destination is a FIFO queue or topic; DefaultGroup is the
	// group of events without a partition key (message_group_id).
	FIFO         bool
	DefaultGroup string
}

// Prepare encodes m and checks it against lim; its error is permanent:
// the payload over the announced limit or the message over the service's
// (herald.ErrPayloadTooLarge, naming the limit), or a FIFO destination
// and no group for an event without a partition key.
func Prepare(m broker.Message, source string, lim Limits) (Outgoing, error) {
	o := Outgoing{Message: Encode(m, source)}
	id, payload, size := m.Event.ID, len(m.Event.Payload), o.Size()
	switch {
	case payload > lim.MaxPayload:
		return o, herald.Permanent(TooLarge(lim.Service, id, payload, payload, lim.MaxPayload, "max_payload"))
	case size > lim.MaxSize:
		return o, herald.Permanent(TooLarge(lim.Service, id, payload, size, lim.MaxSize, lim.SizeName))
	}
	if !lim.FIFO {
		return o, nil
	}
	o.Group, o.Dedup = FIFOID(m.Event.PartitionKey), FIFOID(broker.DedupeID(m))
	if o.Group == "" {
		o.Group = lim.DefaultGroup
	}
	if o.Group == "" {
		return o, herald.Permanent(fmt.Errorf("%s: event %s has no partition key, and the FIFO destination %s needs a "+
			"MessageGroupId: set the broker's message_group_id or give the event a partition key", lim.Service, id, m.Destination))
	}
	return o, nil
}

// FIFOID returns s as a FIFO group or deduplication id: itself when SQS
// and SNS take it (up to 128 of a-z A-Z 0-9 and ASCII punctuation), else
// a SHA-256 of it, the same for the same s so that order and dedupe hold.
func FIFOID(s string) string {
	ok := len(s) <= 128
	for i := 0; ok && i < len(s); i++ {
		ok = s[i] > ' ' && s[i] < 0x7f
	}
	if ok {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + hex.EncodeToString(sum[:])
}
