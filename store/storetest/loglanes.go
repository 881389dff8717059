package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

var logLaneTests = []featureTest[store.LogReader]{
	{"CheckOrRoundTrip", testLogLane},
}

// testLogLane: a store that reads its database's log says what log lanes
// need (LogRequirements). On a database that cannot serve them, CheckLog
// and OpenLog refuse with ErrLogUnavailable; on one that can, a lane reads
// committed events in commit order and its recorded marks reach the rows.
func testLogLane(t *testing.T, h *harness, lr store.LogReader) {
	if reqs := lr.LogRequirements(h.ctx); len(reqs) == 0 {
		errorf(t, "LogRequirements names what log lanes need", "no lines")
	}
	p := store.LogParams{Scope: h.scope(), Lane: randomName("lane"), Owner: "storetest", Lease: time.Minute}
	err := lr.CheckLog(h.ctx)
	if err == nil {
		testLogRoundTrip(t, h, lr, p)
		return
	}
	if !errors.Is(err, store.ErrLogUnavailable) {
		errorf(t, "CheckLog's refusal wraps ErrLogUnavailable", "got %v", err)
	}
	st, err := lr.OpenLog(h.ctx, p)
	if st != nil {
		_ = st.Close()
	}
	if !errors.Is(err, store.ErrLogUnavailable) {
		errorf(t, "OpenLog refuses a database CheckLog refuses", "got %v, want ErrLogUnavailable", err)
	}
	t.Logf("the database serves no log lanes (%v): the stream's round trip is left out", err)
}

// testLogRoundTrip opens a lane, reads three committed events, records
// them delivered and applies the marks.
func testLogRoundTrip(t *testing.T, h *harness, lr store.LogReader, p store.LogParams) {
	// Drop removes the lane's position and what the database keeps for it
	// (PostgreSQL's slot would hold the server's WAL for ever).
	t.Cleanup(func() { _ = h.s.Drop(context.Background(), h.table) })
	st, err := lr.OpenLog(h.ctx, p)
	if err != nil {
		t.Fatalf("[log lanes] OpenLog: %v", err)
	}
	defer st.Close()
	evs := []herald.Event{event("A"), event("B"), event("C")}
	h.enqueue(evs...)
	var recs []store.Record
	var end uint64
	for deadline := time.Now().Add(30 * time.Second); len(recs) < len(evs) && time.Now().Before(deadline); {
		b, err := st.Next(h.ctx, 100, time.Second)
		if err != nil {
			t.Fatalf("[log lanes] Next: %v", err)
		}
		recs, end = append(recs, b.Records...), b.End
	}
	got := make([]string, len(recs))
	ds := make([]store.Delivery, len(recs))
	for i, r := range recs {
		got[i], ds[i] = r.Event.ID, store.Delivery{ID: r.ID}
	}
	if want := []string{evs[0].ID, evs[1].ID, evs[2].ID}; !slices.Equal(got, want) {
		t.Fatalf("[a log lane reads committed events in commit order] read %q, want %q", got, want)
	}
	if err := st.Record(h.ctx, end, ds); err != nil {
		t.Fatalf("[log lanes] Record: %v", err)
	}
	var marked int
	eventually(t, 30*time.Second, "recorded marks reach the rows", func() bool {
		res, err := lr.ApplyMarks(h.ctx, h.table, p.Lane, 10, false)
		if err != nil {
			t.Fatalf("[log lanes] ApplyMarks: %v", err)
		}
		marked += res.Marked
		return marked == len(evs)
	})
	if s := h.stats(); s.Delivered != int64(len(evs)) || s.Pending != 0 {
		errorf(t, "marked log events are delivered rows", "stats %+v", s)
	}
}
