package brokertest

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker"
)

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func testContract(t *testing.T, tg Target) {
	t.Run("body and headers", func(t *testing.T) { testHeaders(t, tg) })
	t.Run("dedupe", func(t *testing.T) { testDedupe(t, tg) })
	t.Run("owned headers win", func(t *testing.T) { testColliding(t, tg) })
}

// testHeaders checks the message contract for one message carrying every
// optional field.
func testHeaders(t *testing.T, tg Target) {
	s := tg.New(t)
	dest := s.Destination("contract")
	m := message(dest, "user-42", 0)
	m.Event.Payload = []byte("\x00binary body, not JSON\xff")
	m.Event.Headers = map[string]string{"traceparent": traceparent, "x-app": "giftwall"}
	requireOK(t, "contract.accepted", tg.publish(t, s, []broker.Message{m}))

	got := s.Read(t, dest, 1)
	if len(got) != 1 {
		t.Fatalf("[rule contract.stored] broker holds %d messages at %s, want 1", len(got), dest)
	}
	r := got[0]
	if !bytes.Equal(r.Body, m.Event.Payload) {
		t.Errorf("[rule contract.payload-is-body] body = %q, want the payload %q", r.Body, m.Event.Payload)
	}
	if r.Destination != "" && r.Destination != dest {
		t.Errorf("[rule contract.destination] stored at %q, want %q", r.Destination, dest)
	}
	h := headerMap(r.Headers)
	p := strings.ToLower(tg.HeaderPrefix)
	want := map[string]string{
		p + "specversion": broker.SpecVersion,
		p + "id":          m.Event.ID,
		p + "type":        m.Event.Type,
		p + "source":      tg.Source,
		p + "subject":     m.Event.PartitionKey,
		p + "tenant":      m.Event.Tenant,
		"traceparent":     traceparent,
		"x-app":           "giftwall",
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("[rule contract.headers] header %s = %q, want %q (headers: %v)", k, h[k], v, r.Headers)
		}
	}
	if ts, err := time.Parse(time.RFC3339Nano, h[p+"time"]); err != nil || !ts.Equal(m.Event.CreatedAt) {
		t.Errorf("[rule contract.headers] header %stime = %q, want %s in RFC 3339", p, h[p+"time"], m.Event.CreatedAt.Format(time.RFC3339Nano))
	}
	if tg.MessageID && r.MessageID != m.Event.ID {
		t.Errorf("[rule contract.message-id] broker message id = %q, want the event id %q", r.MessageID, m.Event.ID)
	}
	if tg.Key && r.Key != m.Event.PartitionKey {
		t.Errorf("[rule contract.key] record key = %q, want the partition key %q", r.Key, m.Event.PartitionKey)
	}
}

// testDedupe republishes an event id: a broker that dedupes stores it once
// and, when it can tell, reports the duplicate; one that declares no dedupe
// stores it twice (consumers must dedupe) and reports no duplicate. A
// sentinel published last proves the broker has processed the republish
// before we count.
func testDedupe(t *testing.T, tg Target) {
	if !tg.Guarantees.Dedupe {
		testNoDedupe(t, tg)
		return
	}
	if tg.Guarantees.DedupeWindow <= 0 {
		t.Errorf("[rule contract.dedupe-window] Dedupe is declared with a window of %v, want > 0", tg.Guarantees.DedupeWindow)
	}
	s := tg.New(t)
	dest := s.Destination("dedupe")
	m := message(dest, "k", 0)
	first := tg.publish(t, s, []broker.Message{m})
	requireOK(t, "contract.dedupe", first)
	m.Attempt = 2
	again := tg.publish(t, s, []broker.Message{m})
	requireOK(t, "contract.dedupe", again)
	if tg.ReportsDuplicates {
		if first[0].Receipt.Duplicate {
			t.Errorf("[rule contract.dedupe-reported] first publish reported as duplicate")
		}
		if !again[0].Receipt.Duplicate {
			t.Errorf("[rule contract.dedupe-reported] republish of event %s not reported as duplicate (receipt %+v)", m.Event.ID, again[0].Receipt)
		}
	}
	sentinel := message(dest, "k", 1)
	requireOK(t, "contract.dedupe", tg.publish(t, s, []broker.Message{sentinel}))
	got := tg.byEventID(s.Read(t, dest, 2))
	if len(got[sentinel.Event.ID]) != 1 {
		t.Fatalf("[rule contract.dedupe] sentinel stored %d times, want once", len(got[sentinel.Event.ID]))
	}
	if n := len(got[m.Event.ID]); n != 1 {
		t.Errorf("[rule contract.dedupe] event %s published twice is stored %d times, want once", m.Event.ID, n)
	}
}

// testNoDedupe checks the declaration of a broker without dedupe: the
// republished event is stored again and no receipt calls it a duplicate,
// so a consumer that relies on the broker alone would see it twice.
func testNoDedupe(t *testing.T, tg Target) {
	s := tg.New(t)
	dest := s.Destination("dedupe") // a name the targets already provision (Kafka seeds its topics)
	m := message(dest, "k", 0)
	first := tg.publish(t, s, []broker.Message{m})
	requireOK(t, "contract.no-dedupe", first)
	m.Attempt = 2
	again := tg.publish(t, s, []broker.Message{m})
	requireOK(t, "contract.no-dedupe", again)
	if first[0].Receipt.Duplicate || again[0].Receipt.Duplicate {
		t.Errorf("[rule contract.no-dedupe] a target declaring no dedupe reported a duplicate (receipts %+v, %+v)",
			first[0].Receipt, again[0].Receipt)
	}
	got := tg.byEventID(s.Read(t, dest, 2))
	if n := len(got[m.Event.ID]); n != 2 {
		t.Errorf("[rule contract.no-dedupe] event %s published twice is stored %d times; a target declaring no dedupe stores both", m.Event.ID, n)
	}
}
