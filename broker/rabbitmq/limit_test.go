package rabbitmq

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/heraldhq/herald"
)

// Rule: a server's version gives its default max_message_size; one Herald
// does not know gives none.
func TestVersionLimit(t *testing.T) {
	for v, want := range map[string]int{"3.10.8": MaxMessageSize3, "3.8.0": MaxMessageSize3, "3.13.7": MaxMessageSize3,
		"4.0.5": MaxMessageSize4, "4.1.0-rc.1": MaxMessageSize4, "3.7.28": 0, "": 0, "x.y": 0} {
		if got := versionLimit(amqp.Table{"version": v}); got != want {
			t.Errorf("version %q: %d, want %d", v, got, want)
		}
	}
	if got := versionLimit(amqp.Table{}); got != 0 {
		t.Errorf("no version: %d, want 0", got)
	}
}

// Rule: the limit is read from a 406 close naming max size, from nothing else.
func TestRefusedLimit(t *testing.T) {
	e := &amqp.Error{Code: amqp.PreconditionFailed,
		Reason: "PRECONDITION_FAILED - message size 134217729 is larger than configured max size 134217728"}
	if got := refusedLimit(e); got != 134217728 {
		t.Errorf("refusedLimit = %d", got)
	}
	for _, other := range []*amqp.Error{nil, {Code: amqp.NotFound, Reason: e.Reason}, {Code: amqp.PreconditionFailed, Reason: "PRECONDITION_FAILED - inequivalent arg"}} {
		if got := refusedLimit(other); got != 0 {
			t.Errorf("refusedLimit(%v) = %d, want 0", other, got)
		}
	}
}

// Rule: with max_payload unset the limit is the server's, which the real
// server confirms: a payload of exactly that size is accepted, one byte more
// is refused by the server itself (when max_payload lets it through), as a
// permanent ErrPayloadTooLarge naming the server's limit, which the
// publisher then keeps; the next message goes through on a new channel.
// Messages go unrouted (AllowUnroutable): nothing large is stored in the
// shared server.
func TestPayloadLimitFromServer(t *testing.T) {
	f := newFixture(t)
	p := newPublisher(t, Config{URL: testURL(testAddr), Exchange: f.exchange, AllowUnroutable: true})
	limit := p.MaxPayload()
	if limit != MaxMessageSize3 && limit != MaxMessageSize4 {
		t.Fatalf("MaxPayload = %d, want the server version's default max_message_size", limit)
	}
	if got := (&BrokerConfig{Config{URL: testURL(testAddr)}}).PayloadLimit(); got != limit {
		t.Errorf("BrokerConfig.PayloadLimit = %d, the publisher says %d", got, limit)
	}
	at := message("nowhere", "", 0)
	at.Event.Payload = make([]byte, limit)
	// A message of the server's limit (128 MiB) takes seconds to send on
	// a loaded machine: the large publishes get a minute.
	if res := publishWithin(p, time.Minute, at); res[0].Err != nil {
		t.Fatalf("a payload of exactly the limit: %v", res[0].Err)
	}
	over := message("nowhere", "", 0)
	over.Event.Payload = make([]byte, limit+1)
	res := publish(p, over)
	if err := res[0].Err; !herald.IsPermanent(err) || !errors.Is(err, herald.ErrPayloadTooLarge) {
		t.Errorf("one byte over, checked before sending: %v, want a permanent ErrPayloadTooLarge", err)
	}

	loose := newPublisher(t, Config{URL: testURL(testAddr), Exchange: f.exchange, AllowUnroutable: true, MaxPayload: limit + 1<<20})
	res = publishWithin(loose, time.Minute, over, message("nowhere", "", 1))
	if err := res[0].Err; !herald.IsPermanent(err) || !errors.Is(err, herald.ErrPayloadTooLarge) ||
		!strings.Contains(err.Error(), strconv.Itoa(limit)) {
		t.Errorf("one byte over, refused by the server: %v, want a permanent ErrPayloadTooLarge naming %d", err, limit)
	}
	if got := loose.MaxPayload(); got != limit {
		t.Errorf("after the server's refusal MaxPayload = %d, want its %d", got, limit)
	}
	if res := publish(loose, message("nowhere", "", 2)); res[0].Err != nil {
		t.Errorf("the next message after the refusal: %v", res[0].Err)
	}
}

// Rule: max_payload set is the limit, the server unasked; an unreachable
// server leaves Herald's default.
func TestBrokerConfigPayloadLimit(t *testing.T) {
	if got := (&BrokerConfig{Config{URL: "amqp://guest:guest@127.0.0.1:1/", MaxPayload: 1234}}).PayloadLimit(); got != 1234 {
		t.Errorf("max_payload 1234: %d", got)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	closed := ln.Addr().String()
	ln.Close()
	if got := (&BrokerConfig{Config{URL: testURL(closed)}}).PayloadLimit(); got != DefaultMaxPayload {
		t.Errorf("unreachable server: %d, want DefaultMaxPayload %d", got, DefaultMaxPayload)
	}
}
