package nats

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/natsembed"
)

// headerSize must count exactly what the server counts: a message of
// exactly max_payload bytes (payload and headers) is accepted, one byte
// more is refused by our check, before the client or server sees it.
func TestHeaderSizeIsExact(t *testing.T) {
	const limit = 64 << 10
	srv, err := natsembed.Start(natsembed.Config{Dir: t.TempDir(), Port: natsembed.RandomPort, MaxPayload: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	p, err := New(context.Background(), Config{URL: srv.ClientURL(), CreateStream: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if got := p.MaxPayload(); got != limit-HeaderAllowance {
		t.Fatalf("MaxPayload() = %d, want %d", got, limit-HeaderAllowance)
	}

	m := broker.Message{Destination: "herald.exact", Event: herald.Event{
		ID: herald.NewID(), Topic: "t", Type: "T", Payload: bytes.Repeat([]byte("x"), p.MaxPayload()),
		Headers: map[string]string{"x-pad": ""},
	}}
	// Pad the headers so that the whole message is exactly the limit.
	pad := limit - len(m.Event.Payload) - wireSize(m)
	m.Event.Headers["x-pad"] = strings.Repeat("h", pad)
	if r := publish(p, m); r.Err != nil {
		t.Fatalf("message of exactly max_payload: %v", r.Err)
	}
	m.Event.ID = herald.NewID()
	m.Event.Headers["x-pad"] += "h"
	r := publish(p, m)
	if !herald.IsPermanent(r.Err) || !errors.Is(r.Err, herald.ErrPayloadTooLarge) || !strings.Contains(r.Err.Error(), "with headers") {
		t.Fatalf("one byte over max_payload: %v, want our permanent too-large error counting headers", r.Err)
	}
}

// wireSize is the header size sendOne would put on the wire for m.
func wireSize(m broker.Message) int {
	h := natsgo.Header{}
	for k, v := range broker.Headers(m, "ce-", broker.DefaultSource) {
		h.Set(k, v)
	}
	h.Set(jetstream.MsgIDHeader, m.Event.ID)
	return headerSize(h)
}

func publish(p *Publisher, m broker.Message) broker.Result {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.Publish(ctx, []broker.Message{m})[0]
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":                         "nats://127.0.0.1:4222",
		"nats://alice:secret@h:4222":                    "nats://alice:xxxxx@h:4222",
		"nats://s3cr3ttoken@h:4222,nats://b:pw@h2:4222": "nats://xxxxx@h:4222,nats://b:xxxxx@h2:4222",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}
