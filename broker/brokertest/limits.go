package brokertest

import (
	"bytes"
	"errors"
	"strconv"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// limit is the payload limit the suite holds the publisher to: the
// Limiter's answer, else the target's declaration.
func (tg Target) limit(s *Setup) int {
	if l, ok := s.Publisher.(broker.Limiter); ok && l.MaxPayload() > 0 {
		return l.MaxPayload()
	}
	return tg.MaxPayload
}

func testLimits(t *testing.T, tg Target) {
	s := tg.New(t)
	limit := tg.limit(s)
	if limit <= 0 {
		t.Skip("the target declares no payload limit")
	}
	dest := s.Destination("limits")
	atLimit := message(dest, "a", 0)
	atLimit.Event.Payload = bytes.Repeat([]byte("x"), limit)
	atLimit.Event.Headers = map[string]string{"traceparent": traceparent}
	over := message(dest, "b", 1)
	over.Event.Payload = bytes.Repeat([]byte("x"), limit+1)
	res := tg.publish(t, s, []broker.Message{atLimit, over})
	if res[0].Err != nil {
		t.Errorf("[rule limits.at-limit-accepted] payload of exactly MaxPayload (%d bytes) failed: %v", limit, res[0].Err)
	}
	err := res[1].Err
	switch {
	case err == nil:
		t.Fatalf("[rule limits.too-large-is-permanent] payload of %d bytes (limit %d) was accepted", limit+1, limit)
	case !herald.IsPermanent(err) || !errors.Is(err, herald.ErrPayloadTooLarge):
		t.Errorf("[rule limits.too-large-is-permanent] got %v, want a permanent error wrapping herald.ErrPayloadTooLarge", err)
	case !bytes.Contains([]byte(err.Error()), []byte(strconv.Itoa(limit+1))):
		t.Errorf("[rule limits.clear-message] error %q does not say the payload's size (%d bytes)", err, limit+1)
	}
	got := tg.byEventID(s.Read(t, dest, 1))
	if len(got[over.Event.ID]) != 0 {
		t.Errorf("[rule limits.too-large-not-stored] the oversize event was stored")
	}
}
