package binlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql/binlog"
)

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

// Rule: ApplyMarks says what became of every journaled row: marked,
// already settled another way (handed over), or gone (deleted before its
// mark); the journal entry leaves in every case.
func TestBinlogApplyMarksAccountsForEveryRow(t *testing.T) {
	e := newBinlogEnv(t)
	st := e.open("acct")
	e.insert("m1", "m2", "m3", "m4")
	b := readBatch(t, st, 4)
	var ds []store.Delivery
	for _, r := range b.Records {
		ds = append(ds, store.Delivery{ID: r.ID})
	}
	e.exec(`UPDATE ` + e.table + ` SET lease_owner = 'log:acct' WHERE event_id = 'm2'`)
	e.exec(`DELETE FROM ` + e.table + ` WHERE event_id = 'm3'`)
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
	if err := e.db.QueryRow(`SELECT COUNT(*) FROM herald_log_marks`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d journal rows left (%v), want 0", left, err)
	}
}

// Rule: the stray check hands to the polling workers a row the binary log
// passed but that is neither marked, journaled nor handed over, and only
// once the lane's position has passed the log's end read after the sample;
// a row whose mark is journaled is left alone.
func TestBinlogStraysHandedOver(t *testing.T) {
	e := newBinlogEnv(t)
	st := e.open("strays")
	e.insert("lost1", "lost2", "journaled")
	b := readBatch(t, st, 3)
	var journaled int64
	for _, r := range b.Records {
		if r.Event.ID == "journaled" {
			journaled = r.ID
		}
	}
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
	var n int
	if err := e.db.QueryRow(`SELECT COUNT(*) FROM `+e.table+` WHERE event_id IN ('lost1', 'lost2') AND status = 'pending' AND lease_owner = ?`,
		binlog.LogOwner("strays")).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d of the stranded rows are handed over (%v), want 2", n, err)
	}
	if err := e.db.QueryRow(`SELECT COUNT(*) FROM ` + e.table + ` WHERE event_id = 'journaled' AND lease_owner = ''`).Scan(&n); err != nil || n != 1 {
		t.Fatal("the row whose mark is journaled was handed over")
	}
}
