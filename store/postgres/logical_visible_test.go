package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/postgres"
)

// newTrapEnv is a logicalEnv on a server with testenv.CommitTrap.
func newTrapEnv(t *testing.T) *logicalEnv {
	t.Helper()
	return newLogicalEnvWith(t, testenv.CommitTrap...)
}

// trapInsert commits one outbox row, trapped between its commit record and
// its visibility.
func (e *logicalEnv) trapInsert(id string) *testenv.TrappedCommit {
	e.t.Helper()
	tc := testenv.TrapCommit(e.t, e.db, []string{`INSERT INTO ` + e.table + ` (event_id, topic, event_type) VALUES ($1, 't', 'T')`},
		[]any{id})
	if n := e.count("event_id = '" + id + "'"); n != 0 {
		e.t.Fatalf("the trapped row %s is visible already (%d)", id, n)
	}
	return tc
}

// nextWith reads st until a batch holds the event id.
func nextWith(t *testing.T, st store.LogStream, id string) (store.LogBatch, store.Record) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, err := st.Next(context.Background(), 100, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Records {
			if r.Event.ID == id {
				return b, r
			}
		}
	}
	t.Fatalf("the stream did not return %s", id)
	return store.LogBatch{}, store.Record{}
}

func (e *logicalEnv) count(where string) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(`SELECT count(*) FROM ` + e.table + ` WHERE ` + where).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// Rule (issue: delivered log events left pending for ever): the walsender
// sends a transaction once its commit is in the WAL, which may be before
// other sessions see its rows. A mark applied in that window must not be
// lost: Record waits until the transaction is visible before it journals
// (here until its context ends; the recorder's gives up after a while and
// the batch is recorded again), so ApplyMarks finds the row and marks it
// delivered. Before the fix,
// ApplyMarks ran at once, its UPDATE matched nothing, the journal entry was
// deleted anyway and the row stayed pending with no owner for ever.
func TestLogicalMarkOfInvisibleCommit(t *testing.T) {
	e := newTrapEnv(t)
	st := e.open("vis")
	tc := e.trapInsert("hidden")
	b, rec := nextWith(t, st, "hidden")
	if rec.Txn == 0 {
		t.Fatal("a record from the log has no transaction id")
	}
	ds := []store.Delivery{{ID: rec.ID}}
	early, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	journaled := st.Record(early, b.End, ds) == nil
	if journaled {
		t.Error("Record journaled a mark while its transaction was not visible")
	}
	// The marker runs now, as a relay's does after each recorded batch.
	if _, err := e.s.ApplyMarks(context.Background(), e.table, "vis", 8, false); err != nil {
		t.Fatal(err)
	}
	tc.Release(t)
	if !journaled {
		if err := st.Record(context.Background(), b.End, ds); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.s.ApplyMarks(context.Background(), e.table, "vis", 8, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.count("event_id = 'hidden' AND status = 'delivered' AND lease_owner = ''"); n != 1 {
		t.Fatalf("the delivered event's row is not marked delivered (last ApplyMarks: %+v): its mark was lost", res)
	}
	if res != (store.MarksApplied{Batches: 1, Marked: 1}) {
		t.Fatalf("ApplyMarks = %+v, want one batch, one row marked", res)
	}
}

// Rule: a failed log event is handed to the polling workers even when its
// transaction is not visible yet when the reader hands it over: HandOver
// waits for it (here until its context ends, then again once it is
// visible) instead of updating nothing and returning.
func TestLogicalHandOverOfInvisibleCommit(t *testing.T) {
	e := newTrapEnv(t)
	st := e.open("hand")
	tc := e.trapInsert("failing")
	_, rec := nextWith(t, st, "failing")
	fs := []store.LogFailure{{Record: rec, Error: "broker said no", Attempted: true, RetryIn: time.Second}}
	early, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	handed := e.s.HandOver(early, e.table, "hand", fs) == nil
	if handed {
		t.Error("HandOver returned while the row's transaction was not visible")
	}
	tc.Release(t)
	if !handed {
		if err := e.s.HandOver(context.Background(), e.table, "hand", fs); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.count("event_id = 'failing' AND status = 'pending' AND lease_owner = '" + postgres.LogOwner("hand") +
		"' AND attempts = 1 AND last_error = 'broker said no'"); n != 1 {
		t.Fatal("the failed event was not handed over to the polling workers: nothing would ever publish it")
	}
	r, err := e.s.Get(context.Background(), e.table, "failing")
	if err != nil || len(r.Errors) != 1 || r.Errors[0].Attempt != 1 || r.Errors[0].Error != "broker said no" {
		t.Fatalf("the handed-over event's attempt history = %+v, %v; want attempt 1 with the broker's error", r.Errors, err)
	}
}

// Rule: ApplyMarks says what became of every journaled row: marked,
// already settled another way (handed over, delivered), or gone (deleted
// before its mark); the journal entry leaves in every case.
func TestLogicalApplyMarksAccountsForEveryRow(t *testing.T) {
	e := newLogicalEnv(t)
	st := e.open("acct")
	e.insert("m1", "m2", "m3", "m4")
	b := readBatch(t, st, 4)
	ids := map[string]int64{}
	for _, r := range b.Records {
		ids[r.Event.ID] = r.ID
	}
	if _, err := e.db.Exec(`UPDATE ` + e.table + ` SET lease_owner = 'log:acct' WHERE event_id = 'm2'`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Exec(`DELETE FROM ` + e.table + ` WHERE event_id = 'm3'`); err != nil {
		t.Fatal(err)
	}
	ds := []store.Delivery{{ID: ids["m1"]}, {ID: ids["m2"]}, {ID: ids["m3"]}, {ID: ids["m4"]}}
	if err := st.Record(context.Background(), b.End, ds); err != nil {
		t.Fatal(err)
	}
	res, err := e.s.ApplyMarks(context.Background(), e.table, "acct", 8, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.MarksApplied{Batches: 1, Marked: 2, Settled: 1, Gone: 1}); res != want {
		t.Fatalf("ApplyMarks = %+v, want %+v", res, want)
	}
	var left int
	if err := e.db.QueryRow(`SELECT count(*) FROM herald_log_marks`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d journal rows left (%v), want 0", left, err)
	}
}

// readBatch reads st until one batch holds n records.
func readBatch(t *testing.T, st store.LogStream, n int) store.LogBatch {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, err := st.Next(context.Background(), 100, 500*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Records) == n {
			return b
		}
		if len(b.Records) > 0 {
			t.Fatalf("read a batch of %d records, want %d", len(b.Records), n)
		}
	}
	t.Fatalf("no batch of %d records", n)
	return store.LogBatch{}
}

// Rule: the stray check hands to the polling workers a row the log passed
// but that is neither marked, journaled nor handed over (what the defect
// above left behind), and only once the lane's position has passed the log
// end read after the sample; a row whose mark is journaled is left alone.
func TestLogicalStraysHandedOver(t *testing.T) {
	e := newLogicalEnv(t)
	st := e.open("strays")
	e.insert("lost1", "lost2", "journaled")
	b := readBatch(t, st, 3)
	var journaled int64
	for _, r := range b.Records {
		if r.Event.ID == "journaled" {
			journaled = r.ID
		}
	}
	// Recorded as settled, but only one mark journaled: the other two rows
	// are what a lost mark leaves.
	if err := st.Record(context.Background(), b.End, []store.Delivery{{ID: journaled}}); err != nil {
		t.Fatal(err)
	}
	sc := store.Scope{Table: e.table}
	probe, handed, err := e.s.Strays(context.Background(), "strays", sc, store.StrayProbe{}, 100)
	if err != nil || len(handed) != 0 || len(probe.IDs) != 3 {
		t.Fatalf("first check: probe %+v, handed %v, %v; want the three pending rows sampled, none handed over", probe, handed, err)
	}
	again, handed, err := e.s.Strays(context.Background(), "strays", sc, probe, 100)
	if err != nil || len(handed) != 0 || len(again.IDs) != 3 || again.LogEnd != probe.LogEnd {
		t.Fatalf("before the position passed the sample: probe %+v, handed %v, %v; want the probe kept, none handed over", again, handed, err)
	}
	e.insert("later")
	later := readBatch(t, st, 1)
	if err := st.Record(context.Background(), later.End, nil); err != nil {
		t.Fatal(err)
	}
	_, handed, err = e.s.Strays(context.Background(), "strays", sc, probe, 100)
	if err != nil || len(handed) != 2 {
		t.Fatalf("handed over %v, %v; want lost1 and lost2", handed, err)
	}
	if n := e.count("event_id IN ('lost1', 'lost2') AND status = 'pending' AND lease_owner = '" + postgres.LogOwner("strays") + "'"); n != 2 {
		t.Fatalf("%d of the stranded rows are handed over, want 2", n)
	}
	if n := e.count("event_id = 'journaled' AND lease_owner = ''"); n != 1 {
		t.Fatal("the row whose mark is journaled was handed over")
	}
}
