package mqtt

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// Rule: the envelope carries the payload byte for byte, as "data" when it
// is compact JSON of a JSON content type and as "data_base64" otherwise,
// with the attributes as members and the user headers under "headers".
func TestEnvelopeRoundTrip(t *testing.T) {
	created := time.Date(2026, 12, 4, 10, 0, 0, 123000000, time.UTC)
	for name, c := range map[string]struct {
		payload []byte
		ct      string
		member  string
	}{
		"compact json":        {[]byte(`{"a":"<b>","n":[1,2]}`), "", "data"},
		"json content type":   {[]byte(`[1,2]`), "application/cloudevents+json", "data"},
		"spaced json":         {[]byte(`{"a": 1}`), "", "data_base64"},
		"json as text":        {[]byte(`{"a":1}`), "text/plain", "data_base64"},
		"binary":              {[]byte("\x00\xff"), "application/octet-stream", "data_base64"},
		"empty":               {nil, "", "data_base64"},
		"json line separator": {[]byte("\"\u2028\""), "", "data_base64"},
	} {
		t.Run(name, func(t *testing.T) {
			ev := herald.Event{ID: "id-1", Tenant: "t1", Topic: "room", Type: "Opened", PartitionKey: "k",
				Payload: c.payload, CreatedAt: created, Headers: map[string]string{"traceparent": "00-x", "x-app": "wall"}}
			if c.ct != "" {
				ev.Headers["content-type"] = c.ct
			}
			body, err := encodeEnvelope(broker.Message{Event: ev, Destination: "d"}, "src")
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(body, &raw); err != nil {
				t.Fatalf("not JSON: %s", body)
			}
			if _, ok := raw[c.member]; !ok {
				t.Errorf("payload not in %q: %s", c.member, body)
			}
			got := MessageEvent(body)
			if !bytes.Equal(got.Payload, c.payload) || got.ID != "id-1" || got.Type != "Opened" || got.Tenant != "t1" ||
				got.PartitionKey != "k" || got.Topic != "room" || !got.CreatedAt.Equal(created) ||
				got.Headers["traceparent"] != "00-x" || got.Headers["x-app"] != "wall" || got.Headers["content-type"] != c.ct {
				t.Errorf("round trip: %+v from %s", got, body)
			}
		})
	}
}

// Rule: a body that is no envelope is an event without id (a projector
// refuses it), its payload the body.
func TestNotAnEnvelope(t *testing.T) {
	for _, body := range []string{"plain", `{"no":"id"}`, `[1]`, `{"id":"x","data_base64":"%%%"}`} {
		ev := MessageEvent([]byte(body))
		if ev.ID != "" || string(ev.Payload) != body {
			t.Errorf("%s: %+v", body, ev)
		}
	}
}

// Rule: a topic MQTT forbids in a publish is permanent, named, and holds
// back its key; the raw body is the payload alone.
func TestTopicsAndRawBody(t *testing.T) {
	url := requireMQTT(t)
	prefix := strings.ReplaceAll(randomID("herald-raw-"), "-", "")
	r := newReader(t, url, prefix)
	p := newPublisher(t, Config{URL: url, Body: BodyRaw})
	msg := func(dest, key string) broker.Message {
		return broker.Message{Destination: dest, Attempt: 1, Event: herald.Event{ID: herald.NewID(), Topic: "t", Type: "T",
			PartitionKey: key, Payload: []byte("just the payload")}}
	}
	res := publish(p, msg(prefix+"/+/x", "a"), msg(prefix+"/ok", "a"), msg("$SYS/x", "b"), msg("", "c"), msg(prefix+"/ok", "d"))
	for i, want := range []string{"wildcard", "earlier message", "starts with $", "empty", ""} {
		err := res[i].Err
		switch {
		case want == "" && err != nil:
			t.Errorf("message %d: %v", i, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("message %d: %v, want an error saying %q", i, err, want)
		}
	}
	if !herald.IsPermanent(res[0].Err) || herald.IsPermanent(res[1].Err) {
		t.Errorf("the bad topic is permanent, the held-back message not: %v, %v", res[0].Err, res[1].Err)
	}
	got := r.read(prefix+"/ok", 1)
	if len(got) != 1 || string(got[0]) != "just the payload" {
		t.Errorf("raw body: %q", got)
	}
}

// Rule: password_env naming an unset variable is an error of the config,
// naming the key; a bad url names url without quoting it.
func TestConfigErrors(t *testing.T) {
	t.Setenv("HERALD_TEST_MQTT_PW", "")
	for want, cfg := range map[string]Config{
		"password_env":    {PasswordEnv: "HERALD_TEST_MQTT_PW"},
		"url":             {URL: "http://user:secretpw@host/"},
		"body":            {Body: "json"},
		"max_payload":     {MaxPayload: -1},
		"connect_timeout": {ConnectTimeout: -1},
	} {
		err := (&BrokerConfig{Config: cfg}).Validate()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secretpw") {
			t.Errorf("%s: %v", want, err)
		}
	}
	t.Setenv("HERALD_TEST_MQTT_PW", "pw")
	if err := (&BrokerConfig{Config: Config{PasswordEnv: "HERALD_TEST_MQTT_PW"}}).Validate(); err != nil {
		t.Errorf("password_env set: %v", err)
	}
}
