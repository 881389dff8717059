package mqtt

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"

	"github.com/heraldhq/herald/broker"
)

// HeaderPrefix is the prefix the envelope's attributes take when they are
// read as headers (Envelope, brokertest): MQTT 3.1.1 has no headers of
// its own, so the envelope carries the attributes as JSON members and
// Herald reads them under the HTTP binding's "ce-".
const HeaderPrefix = "ce-"

// attributes are the CloudEvents attributes broker.Headers sets, which
// the envelope carries as top-level members (tenant and topic are
// Herald's extension attributes).
var attributes = []string{"specversion", "id", "type", "source", "time", "subject", "tenant", "topic"}

// encodeEnvelope is the message's body in envelope mode: a CloudEvents
// structured-mode JSON event, as the MQTT 3.1.1 binding sends one (its
// only mode: 3.1.1 has no user properties). broker.Headers' attributes
// are members, the content-type header is datacontenttype. The payload is
// "data" when it is compact JSON (so its bytes come back unchanged) and
// its content type, if any, is JSON; "data_base64" otherwise. "headers"
// is Herald's member: the user headers (trace context included) with
// their names as given.
func encodeEnvelope(m broker.Message, source string) ([]byte, error) {
	h := broker.Headers(m, HeaderPrefix, source)
	obj := make(map[string]any, len(attributes)+3)
	for _, a := range attributes {
		if v, ok := h[HeaderPrefix+a]; ok {
			obj[a] = v
			delete(h, HeaderPrefix+a)
		}
	}
	ct, hasCT := h["content-type"]
	if hasCT {
		obj["datacontenttype"] = ct
		delete(h, "content-type")
	}
	payload := m.Event.Payload
	if isCompactJSON(payload) && (!hasCT || jsonContentType(ct)) {
		obj["data"] = json.RawMessage(payload)
	} else {
		obj["data_base64"] = base64.StdEncoding.EncodeToString(payload)
	}
	if len(h) > 0 {
		obj["headers"] = h
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// A payload's "<" must stay "<": data is the payload's own bytes.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, fmt.Errorf("mqtt: event %s: encode the envelope: %w", m.Event.ID, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// isCompactJSON reports whether b is valid JSON with no insignificant
// whitespace and nothing the encoder would rewrite, so that it travels as
// "data" byte for byte.
func isCompactJSON(b []byte) bool {
	if len(b) == 0 || !json.Valid(b) {
		return false
	}
	var c bytes.Buffer
	if json.Compact(&c, b) != nil || !bytes.Equal(c.Bytes(), b) {
		return false
	}
	return !bytes.Contains(b, []byte("\u2028")) && !bytes.Contains(b, []byte("\u2029"))
}

// jsonContentType reports whether ct names JSON (application/json or a
// +json type).
func jsonContentType(ct string) bool {
	t, _, err := mime.ParseMediaType(ct)
	return err == nil && (t == "application/json" || strings.HasSuffix(t, "+json"))
}

// errNotEnvelope says a message body is no envelope Herald can read.
var errNotEnvelope = errors.New("not a CloudEvents JSON envelope")

// Envelope reads a body written in envelope mode: the attributes as
// HeaderPrefix headers (ce-id, ce-type …), datacontenttype as the
// content-type header, the user headers, and the payload. A body that is
// not a JSON object with an "id" member is not an envelope.
func Envelope(body []byte) (headers map[string]string, payload []byte, err error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, nil, errNotEnvelope
	}
	if _, ok := raw["id"]; !ok {
		return nil, nil, errNotEnvelope
	}
	headers = map[string]string{}
	if hs, ok := raw["headers"]; ok {
		if err := json.Unmarshal(hs, &headers); err != nil {
			return nil, nil, fmt.Errorf("%w: headers: %v", errNotEnvelope, err)
		}
	}
	for name, v := range raw {
		var s string
		switch {
		case name == "data" || name == "data_base64" || name == "headers":
		case json.Unmarshal(v, &s) != nil:
			// Not a string: no attribute Herald reads.
		case name == "datacontenttype":
			headers["content-type"] = s
		default:
			headers[HeaderPrefix+name] = s
		}
	}
	payload, err = envelopeData(raw)
	return headers, payload, err
}

// envelopeData is the payload: data_base64 decoded, or data's own bytes.
func envelopeData(raw map[string]json.RawMessage) ([]byte, error) {
	if b64, ok := raw["data_base64"]; ok {
		var s string
		if err := json.Unmarshal(b64, &s); err != nil {
			return nil, fmt.Errorf("%w: data_base64 is not a string", errNotEnvelope)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%w: data_base64: %v", errNotEnvelope, err)
		}
		return b, nil
	}
	if d, ok := raw["data"]; ok {
		return []byte(d), nil
	}
	return nil, nil
}
