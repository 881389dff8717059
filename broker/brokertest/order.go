package brokertest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

func testOrder(t *testing.T, tg Target) {
	t.Run("per-key order", func(t *testing.T) { testKeyOrder(t, tg) })
	t.Run("failed message holds back its key", func(t *testing.T) { testHoldBack(t, tg) })
}

// testKeyOrder publishes interleaved keys in two batches and checks that
// each key's messages are stored in publish order.
func testKeyOrder(t *testing.T, tg Target) {
	if !tg.Guarantees.KeyOrder {
		t.Skip("the target declares no per-key order")
	}
	s := tg.New(t)
	dest := s.Destination("order")
	const keys, perBatch, batches = 4, 100, 2
	var all []broker.Message
	for b := range batches {
		msgs := make([]broker.Message, perBatch)
		for i := range msgs {
			n := b*perBatch + i
			msgs[i] = message(dest, fmt.Sprintf("key-%d", n%keys), n)
		}
		requireOK(t, "order.accepted", tg.publish(t, s, msgs))
		all = append(all, msgs...)
	}
	got := s.Read(t, dest, len(all))
	if len(got) != len(all) {
		t.Fatalf("[rule order.stored] broker holds %d messages, want %d", len(got), len(all))
	}
	// The payload names key and index; per key, indexes must grow.
	want := map[string][][]byte{}
	for _, m := range all {
		want[m.Event.PartitionKey] = append(want[m.Event.PartitionKey], m.Event.Payload)
	}
	gotByKey := map[string][][]byte{}
	for _, r := range got {
		k := headerMap(r.Headers)[strings.ToLower(tg.HeaderPrefix)+"subject"]
		gotByKey[k] = append(gotByKey[k], r.Body)
	}
	for k, w := range want {
		g := gotByKey[k]
		for i := range w {
			if i >= len(g) || !bytes.Equal(g[i], w[i]) {
				t.Fatalf("[rule order.per-key] key %s: message %d stored is %s, want %s", k, i, at(g, i), w[i])
			}
		}
	}
}

func at(b [][]byte, i int) string {
	if i < len(b) {
		return string(b[i])
	}
	return "(missing)"
}

// testHoldBack sends an oversize message (it fails without being stored)
// followed by one of the same key and one of another key: the same-key
// successor must not be stored, or a retry would land behind it.
func testHoldBack(t *testing.T, tg Target) {
	s := tg.New(t)
	limit := tg.limit(s)
	if limit <= 0 {
		t.Skip("the target has no payload limit to provoke an unsent failure")
	}
	dest := s.Destination("holdback")
	big := message(dest, "a", 0)
	big.Event.Payload = bytes.Repeat([]byte("x"), limit+1)
	next := message(dest, "a", 1)
	other := message(dest, "b", 2)
	res := tg.publish(t, s, []broker.Message{big, next, other})
	if !herald.IsPermanent(res[0].Err) {
		t.Fatalf("[rule limits.too-large-is-permanent] oversize message: got %v, want a permanent error", res[0].Err)
	}
	if res[1].Err == nil {
		t.Errorf("[rule order.hold-back] the message after a failed one of the same key was published, want an error")
	} else if herald.IsPermanent(res[1].Err) {
		t.Errorf("[rule order.hold-back] held-back message got a permanent error %v, want a retryable one", res[1].Err)
	}
	if res[2].Err != nil {
		t.Errorf("[rule order.other-keys-go-on] message of another key failed: %v", res[2].Err)
	}
	got := tg.byEventID(s.Read(t, dest, 1))
	if len(got[next.Event.ID]) != 0 {
		t.Errorf("[rule order.hold-back] held-back event %s was stored", next.Event.ID)
	}
	if len(got[other.Event.ID]) != 1 {
		t.Errorf("[rule order.other-keys-go-on] event %s of another key stored %d times, want once", other.Event.ID, len(got[other.Event.ID]))
	}
}
