package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

var deadTests = []test{
	{"KillTrimsError", testKill},
	{"Replay", testReplay},
	{"Purge", testPurge},
	{"ListAndGet", testListGet},
	{"DiedAt", testDiedAt},
}

// testDiedAt: a dead row says when it died (on the database clock, so
// within a minute of the local clock here); other rows have no DiedAt.
func testDiedAt(t *testing.T, h *harness) {
	live, dying := event("Live"), event("Dying")
	h.enqueue(dying)
	h.killAll("poison")
	h.enqueue(live)
	died := h.get(dying.ID).DiedAt
	if died.IsZero() || time.Since(died).Abs() > time.Minute {
		errorf(t, "a dead row says when it died", "DiedAt %v", died)
	}
	if d := h.get(live.ID).DiedAt; !d.IsZero() {
		errorf(t, "only dead rows have a DiedAt", "pending row has %v", d)
	}
	recs, err := h.s.List(h.ctx, store.ListParams{Scope: h.scope(), Status: store.StatusDead, Limit: 10})
	if err != nil || len(recs) != 1 || !recs[0].DiedAt.Equal(died) {
		errorf(t, "List returns DiedAt like Get", "%v %v", recs, err)
	}
}

// killAll claims every claimable row and kills it with msg.
func (h *harness) killAll(msg string) []store.Record {
	h.t.Helper()
	c := newClaimer("killer")
	recs := h.claim(c, 1000)
	fs := make([]store.Failure, len(recs))
	for i, r := range recs {
		fs[i] = store.Failure{ID: r.ID, Error: msg}
	}
	if lost, err := h.s.Kill(h.ctx, c.fence(h), fs); err != nil || len(lost) != 0 {
		h.t.Fatalf("[kill] lost %v err %v", lost, err)
	}
	return recs
}

func testKill(t *testing.T, h *harness) {
	ev := event("A")
	h.enqueue(ev)
	long := strings.Repeat("é", store.MaxErrorLength) // 2 bytes each
	h.killAll(long)
	r := h.get(ev.ID)
	const rule = "Kill moves to dead keeping the error trimmed to MaxErrorLength bytes"
	if r.Status != store.StatusDead {
		errorf(t, rule, "status %q", r.Status)
	}
	if len(r.LastError) == 0 || len(r.LastError) > store.MaxErrorLength ||
		!strings.HasPrefix(long, r.LastError) || !utf8.ValidString(r.LastError) {
		errorf(t, rule, "last_error has %d bytes (valid UTF-8: %v)", len(r.LastError), utf8.ValidString(r.LastError))
	}
	if recs := h.claim(newClaimer("w"), 10); len(recs) != 0 {
		errorf(t, "a dead row is not claimable", "claimed %v", ids(recs))
	}
	if st := h.stats(); st.Dead != 1 {
		errorf(t, "stats count dead rows", "stats %+v", st)
	}
}

func testReplay(t *testing.T, h *harness) {
	a, b, c := event("A"), event("B"), event("C")
	h.enqueue(a, b, c)
	h.killAll("boom")
	n, err := h.s.Replay(h.ctx, h.scope(), []string{a.ID, "no-such-id"})
	if err != nil || n != 1 {
		errorf(t, "Replay of named ids replays only those", "n %d err %v", n, err)
	}
	r := h.get(a.ID)
	if r.Status != store.StatusPending || r.Attempts != 0 {
		errorf(t, "Replay moves dead to pending with attempts 0", "got %+v", r)
	}
	n, err = h.s.Replay(h.ctx, h.scope(), nil)
	if err != nil || n != 2 {
		errorf(t, "Replay with no ids replays every dead row in scope", "n %d err %v", n, err)
	}
	if n, err := h.s.Replay(h.ctx, h.scope(), nil); err != nil || n != 0 {
		errorf(t, "Replay touches only dead rows", "n %d err %v", n, err)
	}
	if recs := h.claim(newClaimer("w"), 10); len(recs) != 3 {
		errorf(t, "a replayed row is claimable at once", "claimed %d rows", len(recs))
	}
}

func testPurge(t *testing.T, h *harness) {
	a, b, live := event("A"), event("B"), event("Live")
	h.enqueue(a, b)
	h.killAll("boom")
	h.enqueue(live)
	n, err := h.s.Purge(h.ctx, h.scope(), []string{a.ID, live.ID})
	if err != nil || n != 1 {
		errorf(t, "Purge deletes only dead rows", "n %d err %v", n, err)
	}
	h.notFound("Purge deletes the named dead rows", a.ID)
	if n, err := h.s.Purge(h.ctx, h.scope(), nil); err != nil || n != 1 {
		errorf(t, "Purge with no ids deletes every dead row in scope", "n %d err %v", n, err)
	}
	if r := h.get(live.ID); r.Status != store.StatusPending {
		errorf(t, "Purge deletes only dead rows", "live row %+v", r)
	}
}

func testListGet(t *testing.T, h *harness) {
	evs := make([]herald.Event, 5)
	for i := range evs {
		evs[i] = event("A")
	}
	h.enqueue(evs...)
	h.killAll("boom")
	page1, err := h.s.List(h.ctx, store.ListParams{Scope: h.scope(), Status: store.StatusDead, Limit: 3})
	if err != nil || len(page1) != 3 {
		t.Fatalf("[List pages by Limit] got %d rows, err %v", len(page1), err)
	}
	page2, err := h.s.List(h.ctx, store.ListParams{Scope: h.scope(), Status: store.StatusDead,
		AfterID: page1[2].ID, Limit: 3})
	if err != nil || len(page2) != 2 || page2[0].ID <= page1[2].ID {
		errorf(t, "List pages by AfterID in id order", "got %v after %v, err %v", ids(page2), ids(page1), err)
	}
	if page1[0].LastError != "boom" || page1[0].Status != store.StatusDead {
		errorf(t, "List returns the rows' state", "got %+v", page1[0])
	}
	if pend, err := h.s.List(h.ctx, store.ListParams{Scope: h.scope(), Status: store.StatusPending}); err != nil || len(pend) != 0 {
		errorf(t, "List returns one state", "pending rows %d err %v", len(pend), err)
	}
	if _, err := h.s.Get(h.ctx, h.table, "no-such-id"); !errors.Is(err, store.ErrNotFound) {
		errorf(t, "Get of an unknown id is ErrNotFound", "err %v", err)
	}
}
