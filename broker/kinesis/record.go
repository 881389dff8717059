// Package kinesis is Herald's Amazon Kinesis Data Streams adapter: a
// batch Publisher (PutRecords, the event's partition key as the record's)
// and a Subscriber for projectors that reads every shard of a stream with
// leases and checkpoints kept in the projection's own database (no
// DynamoDB), parent shards drained before their children after a reshard.
//
// A Kinesis record has no headers: its data is the event as a CloudEvent
// in the JSON event format ("structured mode"): the attributes as members
// (specversion, id, type, source, time, subject, and Herald's tenant and
// topic), the payload as "data" when it is compact JSON, else base64 in
// "data_base64". User headers whose names are valid CloudEvents extension
// names (traceparent) are extension members; the others are in the member
// "heraldheaders", an object. Decode reads it back.
package kinesis

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/internal/awsmsg"
)

// HeadersMember is the member holding the user headers that are not
// valid CloudEvents extension names.
const HeadersMember = "heraldheaders"

// contextMembers are the members that are not user headers.
var contextMembers = map[string]bool{
	"specversion": true, "id": true, "type": true, "source": true, "time": true, "subject": true,
	"tenant": true, "topic": true, "data": true, "data_base64": true, "datacontenttype": true,
	"dataschema": true, HeadersMember: true,
}

// extensionName reports whether name can be a CloudEvents extension
// member of its own: 1 to 20 of a-z and 0-9, not a context member.
func extensionName(name string) bool {
	if name == "" || len(name) > 20 || contextMembers[name] {
		return false
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Encode returns the record data of m: a CloudEvent in JSON.
func Encode(m broker.Message, source string) []byte {
	own, user := awsmsg.Split(m, source)
	doc := make(map[string]any, len(own)+len(user)+2)
	for name, v := range own {
		doc[name] = v
	}
	other := map[string]string{}
	for k, v := range user {
		if extensionName(k) {
			doc[k] = v
		} else {
			other[k] = v
		}
	}
	if len(other) > 0 {
		doc[HeadersMember] = other
	}
	p := m.Event.Payload
	if len(p) > 0 && json.Valid(p) && len(bytes.TrimSpace(p)) == len(p) {
		doc["data"] = json.RawMessage(p)
	} else {
		doc["data_base64"] = base64.StdEncoding.EncodeToString(p)
	}
	out, err := marshalRaw(doc)
	if err != nil {
		// Strings and compact JSON always encode; keep the base64 form.
		delete(doc, "data")
		doc["data_base64"] = base64.StdEncoding.EncodeToString(p)
		out, _ = marshalRaw(doc)
	}
	return out
}

// marshalRaw encodes doc without HTML escaping; json.RawMessage members
// go through as they are (compact JSON is left byte for byte).
func marshalRaw(doc map[string]any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ErrNotCloudEvent is wrapped by Decode's error for data that is not a
// CloudEvent in JSON (a record another producer wrote).
var ErrNotCloudEvent = errors.New("kinesis: record is not a CloudEvent in JSON")

// Decode reads an event from record data written by Encode (or any
// CloudEvent in the JSON format).
func Decode(data []byte) (herald.Event, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil || doc["specversion"] == nil {
		return herald.Event{}, fmt.Errorf("%w: %v", ErrNotCloudEvent, err)
	}
	str := func(name string) string {
		var s string
		_ = json.Unmarshal(doc[name], &s)
		return s
	}
	ev := herald.Event{ID: str("id"), Type: str("type"), PartitionKey: str("subject"), Tenant: str("tenant"), Topic: str("topic")}
	if t, err := time.Parse(time.RFC3339Nano, str("time")); err == nil {
		ev.CreatedAt = t
	}
	switch {
	case doc["data_base64"] != nil:
		p, err := base64.StdEncoding.DecodeString(str("data_base64"))
		if err != nil {
			return herald.Event{}, fmt.Errorf("kinesis: record %s: data_base64: %w", ev.ID, err)
		}
		ev.Payload = p
	case doc["data"] != nil:
		ev.Payload = []byte(doc["data"])
	}
	for name, raw := range doc {
		var s string
		if contextMembers[name] || json.Unmarshal(raw, &s) != nil {
			continue
		}
		setHeader(&ev, name, s)
	}
	var other map[string]string
	if doc[HeadersMember] != nil && json.Unmarshal(doc[HeadersMember], &other) == nil {
		for k, v := range other {
			setHeader(&ev, k, v)
		}
	}
	return ev, nil
}

func setHeader(ev *herald.Event, k, v string) {
	if ev.Headers == nil {
		ev.Headers = map[string]string{}
	}
	ev.Headers[k] = v
}

// Attributes returns record data's attributes as a consumer with
// headers would see them: the CloudEvents attributes under the "ce-"
// prefix, and the user headers as they were sent. For tests and
// `herald tail`.
func Attributes(data []byte) (map[string]string, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotCloudEvent, err)
	}
	h := map[string]string{}
	for name, raw := range doc {
		var s string
		if json.Unmarshal(raw, &s) != nil || name == "data" || name == "data_base64" {
			continue
		}
		if contextMembers[name] {
			name = awsmsg.HeaderPrefix + name
		}
		h[name] = s
	}
	var other map[string]string
	if doc[HeadersMember] != nil && json.Unmarshal(doc[HeadersMember], &other) == nil {
		for k, v := range other {
			h[k] = v
		}
	}
	return h, nil
}
