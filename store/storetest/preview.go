package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

// testPreview checks store.Previewer: Preview returns the due rows of the
// scope a claim would take, in the claim's order and as the claim returns
// them, and changes nothing: the claim after it takes the same rows.
func testPreview(t *testing.T, h *harness, pv store.Previewer) {
	const rule = "Preview returns what the next claim takes, changing nothing"
	later := event("A")
	later.AvailableAt = time.Now().Add(time.Hour)
	h.enqueue(later)
	a, b, other := event("A"), event("A"), event("B")
	a.Headers = map[string]string{"h": "1"}
	h.enqueue(a, b, other)
	sc := h.scope()
	sc.IncludeTypes = []string{"A"}
	preview := func(limit int) []store.Record {
		t.Helper()
		recs, err := pv.Preview(h.ctx, sc, limit)
		if err != nil {
			t.Fatalf("[preview] Preview: %v", err)
		}
		return recs
	}
	if got := preview(1); len(got) != 1 || got[0].Event.ID != a.ID {
		errorf(t, rule, "limit 1 gave %d rows, want the first due one", len(got))
	}
	got := preview(10)
	if len(got) != 2 || got[0].Event.ID != a.ID || got[1].Event.ID != b.ID {
		errorf(t, rule, "got %v, want the two due rows of type A in order", eventIDs(got))
	}
	if len(got) > 0 && (got[0].Attempts != 1 || got[0].Event.Headers["h"] != "1" || string(got[0].Event.Payload) != `{"n":1}`) {
		errorf(t, rule, "first row %+v: want attempt 1, its headers and payload", got[0])
	}
	if st := h.stats(); st.Pending != 4 || st.InFlight != 0 {
		errorf(t, rule, "stats after preview %+v, want 4 pending", st)
	}
	claimed := h.claimWith(newClaimer("w"), store.ClaimParams{Scope: sc})
	if !reflect.DeepEqual(eventIDs(claimed), eventIDs(got)) {
		errorf(t, rule, "the claim took %v, the preview showed %v", eventIDs(claimed), eventIDs(got))
	}
	if len(preview(10)) != 0 {
		errorf(t, rule, "rows in flight under a live lease previewed")
	}
}
