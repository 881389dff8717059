package brokertest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// collidingSpellings returns prefix+name in varied case, the exact
// spelling included: what a service forwarding a CloudEvent copies into a
// row's headers.
func collidingSpellings(prefix, name string) []string {
	exact := prefix + name
	title := strings.ToUpper(prefix[:1]) + prefix[1:] + strings.ToUpper(name[:1]) + name[1:]
	return []string{title, strings.ToUpper(exact), exact, strings.ToLower(prefix) + strings.ToUpper(name)}
}

// CollidingHeaders returns the headers of a row that copied an incoming
// CloudEvent under the binding's prefix, spelled variant i (of several
// cases): its id "forwarded-1" and type "Forwarded". Publishers must send
// the row's own id and type, once each (herald.ReservedHeader).
func CollidingHeaders(prefix string, i int) map[string]string {
	ids, types := collidingSpellings(prefix, "id"), collidingSpellings(prefix, "type")
	return map[string]string{ids[i%len(ids)]: "forwarded-1", types[i%len(types)]: "Forwarded", "x-app": "giftwall"}
}

// testColliding publishes messages whose user headers name the CloudEvents
// id and type in other cases: each stored message carries exactly one id
// and one type header, the event's, and the copied id travels renamed.
func testColliding(t *testing.T, tg Target) {
	s := tg.New(t)
	dest := s.Destination("collide")
	// Several messages: where the broker folds header case (HTTP), which
	// value won used to depend on map order.
	msgs := make([]broker.Message, 12)
	for i := range msgs {
		msgs[i] = message(dest, fmt.Sprint("k", i), i)
		msgs[i].Event.Headers = CollidingHeaders(tg.HeaderPrefix, i)
	}
	requireOK(t, "contract.owned-headers-win", tg.publish(t, s, msgs))
	got := tg.byEventID(s.Read(t, dest, len(msgs)))
	for _, m := range msgs {
		rs := got[m.Event.ID]
		if len(rs) != 1 {
			t.Errorf("[rule contract.owned-headers-win] event %s stored %d times under its own id, want once (ids seen: %v)",
				m.Event.ID, len(rs), keys(got))
			continue
		}
		checkOwned(t, tg, m, rs[0])
	}
}

// checkOwned checks one stored message of testColliding.
func checkOwned(t *testing.T, tg Target, m broker.Message, r Received) {
	t.Helper()
	for name, want := range map[string]string{"id": m.Event.ID, "type": m.Event.Type} {
		var vals []string
		for k, v := range r.Headers {
			if strings.EqualFold(k, tg.HeaderPrefix+name) {
				vals = append(vals, v)
			}
		}
		if len(vals) != 1 || vals[0] != want {
			t.Errorf("[rule contract.owned-headers-win] event %s: %s%s headers %q, want exactly [%s] (headers %v)",
				m.Event.ID, tg.HeaderPrefix, name, vals, want, r.Headers)
		}
	}
	renamed := herald.RenamedHeaderPrefix + strings.ToLower(tg.HeaderPrefix) + "id"
	if h := headerMap(r.Headers); h[renamed] != "forwarded-1" || h["x-app"] != "giftwall" {
		t.Errorf("[rule contract.owned-headers-win] event %s: header %s = %q, want the copied id forwarded-1 kept there (headers %v)",
			m.Event.ID, renamed, h[renamed], r.Headers)
	}
	if tg.MessageID && r.MessageID != m.Event.ID {
		t.Errorf("[rule contract.owned-headers-win] event %s: broker message id %q, want the event id", m.Event.ID, r.MessageID)
	}
}

func keys(m map[string][]Received) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
