package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

var headersTests = []test{
	{"NotAnObjectOfStrings", testHeadersNotAnObjectOfStrings},
}

// plainHeadersInsert is a plain INSERT that sets the headers column as a
// program in another language might; its parameters are event_id and headers.
func plainHeadersInsert(d herald.Dialect, table string) string {
	return d.Rebind("INSERT INTO " + table + " (event_id, topic, event_type, headers) VALUES (?, 'orders', 'OrderPlaced', ?)")
}

// testHeadersNotAnObjectOfStrings: a headers column written by plain SQL
// that is not a JSON object of strings is neither dropped nor altered, nor
// does it fail the claim of the rows around it: the record carries the
// reason in HeadersErr (the relay then kills the row unpublished). A
// database whose schema refuses such a value at INSERT passes as well.
func testHeadersNotAnObjectOfStrings(t *testing.T, h *harness) {
	const rule = "headers that are not a JSON object of strings come back as HeadersErr"
	bad := map[string]string{ // event id → headers column
		"h-invalid": `{"a":`,
		"h-array":   `["a","b"]`,
		"h-number":  `42`,
		"h-values":  `{"s":"x","n":1}`,
	}
	good := event("Good")
	good.Headers = map[string]string{"k": "v"}
	h.enqueue(good)
	stored := map[string]bool{}
	for id, headers := range bad {
		if _, err := h.s.DB().ExecContext(h.ctx, plainHeadersInsert(h.s.Dialect(), h.table), id, headers); err == nil {
			stored[id] = true
		}
	}
	if !stored["h-values"] {
		t.Fatalf("[%s] the database refused an object with a number value; every schema must take it", rule)
	}
	recs := h.claim(newClaimer("w"), 100)
	if len(recs) != 1+len(stored) {
		t.Fatalf("[%s] claimed %d rows, want %d: a bad headers column must not fail or skip the claim", rule, len(recs), 1+len(stored))
	}
	for _, r := range recs {
		if r.Event.ID == good.ID {
			if r.HeadersErr != nil || r.Event.Headers["k"] != "v" {
				errorf(t, rule, "good row: headers %v, HeadersErr %v", r.Event.Headers, r.HeadersErr)
			}
			continue
		}
		checkHeadersErr(t, rule, "claim", r)
		got := h.get(r.Event.ID)
		checkHeadersErr(t, rule, "get", got)
		var he *store.HeadersError
		if !errors.As(got.HeadersErr, &he) || he.Stored != bad[r.Event.ID] {
			errorf(t, "bad headers come back verbatim, as stored", "get of %s: %#v, stored %q", r.Event.ID, got.HeadersErr, bad[r.Event.ID])
		}
	}
	listed, err := h.s.List(h.ctx, store.ListParams{Scope: h.scope(), Status: store.StatusInFlight})
	if err != nil {
		t.Fatalf("[%s] List: %v", rule, err)
	}
	for _, r := range listed {
		if r.Event.ID != good.ID {
			checkHeadersErr(t, rule, "list", r)
		}
	}
}

func checkHeadersErr(t *testing.T, rule, read string, r store.Record) {
	t.Helper()
	if r.HeadersErr == nil || r.Event.Headers != nil ||
		!strings.HasPrefix(r.HeadersErr.Error(), "headers is not a JSON object of strings: ") {
		errorf(t, rule, "%s of %s: headers %v, HeadersErr %v", read, r.Event.ID, r.Event.Headers, r.HeadersErr)
	}
}
