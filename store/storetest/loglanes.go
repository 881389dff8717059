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
	{"JournalStaysWithItsTable", testLogJournalStaysWithItsTable},
	{"ResetStartsTheLaneAnew", testLogReset},
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
	recs, end := readLog(t, h, st, len(evs))
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

// readLog reads st until it has n records (or 30 s passed) and returns
// them with the end of the last batch.
func readLog(t *testing.T, h *harness, st store.LogStream, n int) (recs []store.Record, end uint64) {
	for deadline := time.Now().Add(30 * time.Second); len(recs) < n && time.Now().Before(deadline); {
		b, err := st.Next(h.ctx, 100, time.Second)
		if err != nil {
			t.Fatalf("[log lanes] Next: %v", err)
		}
		recs, end = append(recs, b.Records...), b.End
	}
	return recs, end
}

// openTestLane opens a new lane on h's table, which the test's end drops
// (with the lane's slot); nil when the database serves no log lanes.
func openTestLane(t *testing.T, h *harness, lr store.LogReader) (store.LogStream, store.LogParams) {
	p := store.LogParams{Scope: h.scope(), Lane: randomName("lane"), Owner: "storetest", Lease: time.Minute}
	if err := lr.CheckLog(h.ctx); err != nil {
		t.Logf("the database serves no log lanes (%v): nothing to check", err)
		return nil, p
	}
	t.Cleanup(func() { _ = h.s.Drop(context.Background(), h.table) })
	st, err := lr.OpenLog(h.ctx, p)
	if err != nil {
		t.Fatalf("[log lanes] OpenLog: %v", err)
	}
	return st, p
}

// testLogJournalStaysWithItsTable: a journaled mark names its row by id,
// so it reaches only the table it was recorded for. ApplyMarks on another
// table applies none of it, and Drop forgets it with its table: a table
// made again under the name numbers its rows from 1 again, and the old
// marks must not mark them delivered.
func testLogJournalStaysWithItsTable(t *testing.T, h *harness, lr store.LogReader) {
	st, p := openTestLane(t, h, lr)
	if st == nil {
		return
	}
	h.enqueue(event("A"), event("B"))
	recs, end := readLog(t, h, st, 2)
	ds := make([]store.Delivery, len(recs))
	for i, r := range recs {
		ds[i] = store.Delivery{ID: r.ID}
	}
	if err := st.Record(h.ctx, end, ds); err != nil {
		t.Fatalf("[log lanes] Record: %v", err)
	}
	_ = st.Close()
	other := randomName("herald_t")
	h.migrate(other)
	t.Cleanup(func() { _ = h.s.Drop(context.Background(), other) })
	if res, err := lr.ApplyMarks(h.ctx, other, p.Lane, 10, false); err != nil || res != (store.MarksApplied{}) {
		errorf(t, "a journaled mark is applied only to its own table", "ApplyMarks on another table = %+v, %v", res, err)
	}
	if err := h.s.Drop(h.ctx, h.table); err != nil {
		t.Fatalf("[log lanes] Drop: %v", err)
	}
	h.migrate(h.table)
	h.enqueue(event("C"), event("D"))
	if res, err := lr.ApplyMarks(h.ctx, h.table, p.Lane, 10, false); err != nil || res != (store.MarksApplied{}) {
		errorf(t, "Drop forgets the table's unapplied marks", "ApplyMarks after Drop and Migrate = %+v, %v", res, err)
	}
	if s := h.stats(); s.Pending != 2 || s.Delivered != 0 {
		errorf(t, "marks journaled before Drop leave the new table's rows alone", "stats %+v, want 2 pending", s)
	}
}

// testLogReset: ResetLog refuses while a reader holds the lane, changing
// nothing; once the reader stopped it applies the journal (a published
// row is marked, not published again) and forgets the position, so that
// the lane's next start is a first start: the rows it never published are
// handed to its polling workers and the stream begins at the log's end.
func testLogReset(t *testing.T, h *harness, lr store.LogReader) {
	st, p := openTestLane(t, h, lr)
	if st == nil {
		return
	}
	h.enqueue(event("A"), event("B"))
	recs, end := readLog(t, h, st, 2)
	if err := st.Record(h.ctx, end, []store.Delivery{{ID: recs[0].ID}}); err != nil {
		t.Fatalf("[log lanes] Record: %v", err)
	}
	if _, err := lr.ResetLog(h.ctx, p.Lane, false); !errors.Is(err, store.ErrLogLeaseHeld) {
		errorf(t, "ResetLog refuses a lane whose lease a reader holds", "got %v, want ErrLogLeaseHeld", err)
	}
	if s := h.stats(); s.Pending != 2 {
		errorf(t, "a refused reset changes nothing", "stats %+v, want 2 pending", s)
	}
	_ = st.Close()
	res, err := lr.ResetLog(h.ctx, p.Lane, false)
	if err != nil {
		t.Fatalf("[log lanes] ResetLog: %v", err)
	}
	if !res.Recorded || res.Table != h.table || res.Marks.Marked != 1 {
		errorf(t, "ResetLog applies the journal of the lane it forgets", "got %+v, want recorded, table %s, 1 marked", res, h.table)
	}
	if s := h.stats(); s.Delivered != 1 || s.Pending != 1 {
		errorf(t, "the row journaled before the reset is delivered", "stats %+v", s)
	}
	if again, err := lr.ResetLog(h.ctx, p.Lane, false); err != nil || again.Recorded {
		errorf(t, "a lane reset twice has nothing recorded the second time", "got %+v, %v", again, err)
	}
	testLogStartsAnew(t, h, lr, p)
}

// testLogStartsAnew: a lane opened after its reset hands the pending row
// to its polling workers and streams only what commits after.
func testLogStartsAnew(t *testing.T, h *harness, lr store.LogReader, p store.LogParams) {
	st, err := lr.OpenLog(h.ctx, p)
	if err != nil {
		t.Fatalf("[log lanes] OpenLog after ResetLog: %v", err)
	}
	defer st.Close()
	if recs := h.claimWith(newClaimer("polling"), store.ClaimParams{HandedOver: true}); len(recs) != 1 || recs[0].Event.Type != "B" {
		errorf(t, "a lane started anew hands the row it never published to its polling workers", "its polling workers claimed %d rows, want B", len(recs))
	}
	c := event("C")
	h.enqueue(c)
	if recs, _ := readLog(t, h, st, 1); len(recs) != 1 || recs[0].Event.ID != c.ID {
		errorf(t, "a lane started anew reads from the log's end", "read %d records, want only C", len(recs))
	}
}
