package binlog_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/mysql/binlog"
	"github.com/heraldhq/herald/store/storetest"
)

// binlogEnv is a MariaDB of the test's own with the binary log in row
// format, a store on it and a migrated table.
type binlogEnv struct {
	t     *testing.T
	m     *testenv.MariaDB
	dsn   string
	s     *binlog.Store
	db    *sql.DB
	table string
}

// TestBinlogConformance runs the suite's groups of optional abilities on a
// server whose binary log Herald can read (store/mysql runs the whole
// suite on the shared server, whose binary log is off).
func TestBinlogConformance(t *testing.T) {
	e := newBinlogEnv(t)
	storetest.RunFeatures(t, func(tb testing.TB) store.Store {
		s, err := binlog.Open(context.Background(), e.dsn, mysql.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		return s
	}, storetest.Features{Peeks: true, IndexByUse: true, LogLanes: true})
}

func newBinlogEnv(t *testing.T, extra ...string) *binlogEnv {
	t.Helper()
	m, dsn := testenv.NewBinlogMariaDB(t, extra...)
	s, err := binlog.Open(context.Background(), dsn, mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	table := "log_outbox"
	if err := s.Migrate(context.Background(), table); err != nil {
		t.Fatal(err)
	}
	return &binlogEnv{t: t, m: m, dsn: dsn, s: s, db: s.DB(), table: table}
}

func (e *binlogEnv) params(lane string) store.LogParams {
	return store.LogParams{Scope: store.Scope{Table: e.table}, Lane: lane, Owner: "test-" + lane, Lease: 10 * time.Second}
}

func (e *binlogEnv) open(lane string) store.LogStream {
	e.t.Helper()
	st, err := e.s.OpenLog(context.Background(), e.params(lane))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { st.Close() })
	return st
}

func (e *binlogEnv) exec(q string, args ...any) {
	e.t.Helper()
	if _, err := e.db.Exec(q, args...); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
}

// insert commits one outbox row per id, in one transaction.
func (e *binlogEnv) insert(ids ...string) {
	e.t.Helper()
	tx, err := e.db.Begin()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := tx.Exec(`INSERT INTO `+e.table+` (event_id, topic, event_type, payload) VALUES (?, 't', 'T', '{}')`, id); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		e.t.Fatal(err)
	}
}

// read collects event ids from st until it has n (or fails after 30 s),
// recording each batch.
func read(t *testing.T, st store.LogStream, n int) []string {
	t.Helper()
	var ids []string
	deadline := time.Now().Add(30 * time.Second)
	for len(ids) < n && time.Now().Before(deadline) {
		b, err := st.Next(context.Background(), 100, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Records {
			ids = append(ids, r.Event.ID)
		}
		if err := st.Record(context.Background(), b.End, nil); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// Rule: a binlog lane's stream holds every committed event in commit order:
// a long transaction whose INSERT ran first but committed last comes last;
// a rolled-back transaction's row never appears; a binlog rotation (FLUSH
// BINARY LOGS) in the middle changes nothing; the row's columns arrive as
// written.
func TestBinlogCommitOrder(t *testing.T) {
	e := newBinlogEnv(t)
	st := e.open("order")
	long, err := e.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := long.Exec(`INSERT INTO ` + e.table + ` (event_id, topic, event_type) VALUES ('long', 't', 'T')`); err != nil {
		t.Fatal(err)
	}
	e.insert("a1", "a2")
	rolled, err := e.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rolled.Exec(`INSERT INTO ` + e.table + ` (event_id, topic, event_type) VALUES ('rolled-back', 't', 'T')`); err != nil {
		t.Fatal(err)
	}
	if err := rolled.Rollback(); err != nil {
		t.Fatal(err)
	}
	e.exec("FLUSH BINARY LOGS")
	e.exec(`INSERT INTO `+e.table+` (event_id, tenant, topic, event_type, partition_key, headers, payload, created_at)
VALUES ('b1', 'acme', 'orders', 'Placed', 'k', '{"h":"v"}', ?, '2026-01-02 03:04:05.678901')`, []byte{0, 1, 0xff})
	got := read(t, st, 3)
	time.Sleep(2 * time.Second) // the long transaction stays open: nothing of it may appear meanwhile
	if err := long.Commit(); err != nil {
		t.Fatal(err)
	}
	e.insert("c1")
	got = append(got, read(t, st, 2)...)
	if want := "a1 a2 b1 long c1"; strings.Join(got, " ") != want {
		t.Fatalf("stream = %v, want %s", got, want)
	}
}

// Rule: every column of a row arrives as written (id, tenant, key,
// headers, binary payload, created_at in UTC).
func TestBinlogRowColumns(t *testing.T) {
	e := newBinlogEnv(t)
	st := e.open("columns")
	e.exec(`INSERT INTO `+e.table+` (event_id, tenant, topic, event_type, partition_key, headers, payload, created_at)
VALUES ('b1', 'acme', 'orders', 'Placed', 'k', '{"h":"v"}', ?, '2026-01-02 03:04:05.678901')`, []byte{0, 1, 0xff})
	b, err := st.Next(context.Background(), 100, 10*time.Second)
	if err != nil || len(b.Records) != 1 {
		t.Fatalf("read %v, %v; want one event", b.Records, err)
	}
	var id int64
	if err := e.db.QueryRow(`SELECT id FROM ` + e.table + ` WHERE event_id = 'b1'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	r := b.Records[0]
	ev := r.Event
	if r.ID != id || r.HeadersErr != nil || ev.Tenant != "acme" || ev.Topic != "orders" || ev.Type != "Placed" || ev.PartitionKey != "k" ||
		ev.Headers["h"] != "v" || string(ev.Payload) != "\x00\x01\xff" ||
		!ev.CreatedAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 678901000, time.UTC)) {
		t.Fatalf("decoded %+v (row id %d, want %d)", r, r.ID, id)
	}
}

// Rule: a lane resumes where it recorded, across a reopen and a SIGKILL of
// the database: an event read but not recorded comes again, nothing
// recorded does.
func TestBinlogResumeAfterDatabaseKill(t *testing.T) {
	e := newBinlogEnv(t)
	st := e.open("resume")
	e.insert("r1", "r2")
	if got := read(t, st, 2); strings.Join(got, " ") != "r1 r2" {
		t.Fatalf("first read %v", got)
	}
	e.insert("r3") // read but not recorded below: must come again
	b, err := st.Next(context.Background(), 100, 5*time.Second)
	if err != nil || len(b.Records) != 1 {
		t.Fatalf("r3: %v %v", b.Records, err)
	}
	e.m.Kill()
	if _, err := st.Next(context.Background(), 100, 5*time.Second); err == nil {
		t.Fatal("the stream read on after its server was killed")
	}
	st.Close()
	e.m.Start(t)
	testenv.WaitFor(t, 30*time.Second, 100*time.Millisecond, "the store back", func() bool { return e.db.Ping() == nil })
	e.insert("r4")
	st2 := e.open("resume")
	if got := read(t, st2, 2); strings.Join(got, " ") != "r3 r4" {
		t.Fatalf("after the restart the stream read %v, want r3 r4", got)
	}
}

// Rule: a position the server purged stops the lane with
// ErrLogPositionLost naming it (never a jump to the current end, which
// would skip what was written meanwhile); the documented recovery (delete
// the lane's position row) hands every unmarked row to the polling
// workers and streams from then on.
func TestBinlogPurgedPosition(t *testing.T) {
	e := newBinlogEnv(t)
	st := e.open("purged")
	e.insert("d1")
	read(t, st, 1)
	st.Close()
	var file string
	if err := e.db.QueryRow(`SELECT log_file FROM herald_log_lanes WHERE lane = 'purged'`).Scan(&file); err != nil {
		t.Fatal(err)
	}
	e.exec("FLUSH BINARY LOGS")
	e.insert("d2") // written after the lane's position, in a file kept
	e.exec("FLUSH BINARY LOGS")
	rows, err := e.db.Query("SHOW MASTER STATUS")
	if err != nil || !rows.Next() {
		t.Fatalf("SHOW MASTER STATUS: %v", err)
	}
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	for i := range vals {
		vals[i] = new(sql.RawBytes)
	}
	if err := rows.Scan(vals...); err != nil {
		t.Fatal(err)
	}
	current := string(*vals[0].(*sql.RawBytes))
	rows.Close()
	// The closed stream's dump thread may still read file a moment: the
	// server skips a file in use (with a warning), so purge until it is gone.
	testenv.WaitFor(t, 10*time.Second, 50*time.Millisecond, file+" purged", func() bool {
		e.exec("PURGE BINARY LOGS TO '" + current + "'")
		_, listed := e.binaryLogs(t)[file]
		return !listed
	})
	_, err = e.s.OpenLog(context.Background(), e.params("purged"))
	if !errors.Is(err, store.ErrLogPositionLost) || !strings.Contains(err.Error(), file) {
		t.Fatalf("OpenLog after the purge: %v, want ErrLogPositionLost naming %s", err, file)
	}
	e.exec(`DELETE FROM herald_log_lanes WHERE lane = 'purged'`)
	st = e.open("purged")
	var owner string
	if err := e.db.QueryRow(`SELECT lease_owner FROM ` + e.table + ` WHERE event_id = 'd2'`).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	if owner != binlog.LogOwner("purged") {
		t.Fatalf("d2, whose binary log was purged, has lease_owner %q: not handed over", owner)
	}
	e.insert("d3")
	if got := read(t, st, 1); strings.Join(got, " ") != "d3" {
		t.Fatalf("after recovery the stream read %v, want d3", got)
	}
}

// Rule: Record journals the delivered rows with the position in one
// transaction, ApplyMarks marks them delivered with their receipts (or,
// asked to, deletes them and nothing else), and a second reader on the
// lane is refused while the first holds the lease.
func TestBinlogRecordMarksAndLease(t *testing.T) {
	e := newBinlogEnv(t)
	st := e.open("marks")
	if _, err := e.s.OpenLog(context.Background(), store.LogParams{Scope: store.Scope{Table: e.table}, Lane: "marks",
		Owner: "other", Lease: time.Second}); !errors.Is(err, store.ErrLogLeaseHeld) {
		t.Fatalf("a second reader: %v, want ErrLogLeaseHeld", err)
	}
	e.insert("m1", "m2")
	b, err := st.Next(context.Background(), 100, 5*time.Second)
	if err != nil || len(b.Records) != 2 {
		t.Fatalf("read %v, %v", b.Records, err)
	}
	ds := []store.Delivery{{ID: b.Records[0].ID}, {ID: b.Records[1].ID}}
	if err := st.Record(context.Background(), b.End, ds); err != nil {
		t.Fatal(err)
	}
	if res, err := e.s.ApplyMarks(context.Background(), e.table, "marks", 10, false); err != nil || res != (store.MarksApplied{Batches: 1, Marked: 2}) {
		t.Fatalf("ApplyMarks = %+v, %v; want 1 batch, 2 rows marked", res, err)
	}
	if got := e.countRows(t, "status = 'delivered' AND receipt IS NOT NULL"); got != 2 {
		t.Fatalf("%d rows marked delivered, want 2", got)
	}
	e.insert("m3", "m4", "m5")
	b, err = st.Next(context.Background(), 100, 5*time.Second)
	if err != nil || len(b.Records) != 3 {
		t.Fatalf("read %v, %v", b.Records, err)
	}
	ds = []store.Delivery{{ID: b.Records[0].ID}, {ID: b.Records[1].ID}}
	if err := st.Record(context.Background(), b.End, ds); err != nil {
		t.Fatal(err)
	}
	if res, err := e.s.ApplyMarks(context.Background(), e.table, "marks", 10, true); err != nil || res != (store.MarksApplied{Batches: 1, Marked: 2}) {
		t.Fatalf("ApplyMarks deleting = %+v, %v; want 1 batch, 2 rows deleted", res, err)
	}
	if got := e.countRows(t, "event_id IN ('m3', 'm4')"); got != 0 {
		t.Fatalf("%d of the rows delivered with deleting marks are left, want 0", got)
	}
	if got := e.countRows(t, "event_id IN ('m1', 'm2') AND status = 'delivered' OR event_id = 'm5' AND status = 'pending'"); got != 3 {
		t.Fatalf("deleting marks touched other rows: %d of m1, m2 (delivered) and m5 (pending) left, want 3", got)
	}
}

func (e *binlogEnv) countRows(t *testing.T, where string) int {
	t.Helper()
	var n int
	if err := e.db.QueryRow(`SELECT COUNT(*) FROM ` + e.table + ` WHERE ` + where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Rule: a server whose binary log Herald cannot read is refused with an
// error naming the setting: not ROW format, or a user without
// REPLICATION SLAVE; and the shared server, which runs without a binary
// log, is refused naming log_bin.
func TestBinlogRefusesUnreadableLog(t *testing.T) {
	e := newBinlogEnv(t, "--binlog-format=MIXED")
	err := e.s.CheckLog(context.Background())
	if !errors.Is(err, store.ErrLogUnavailable) || !strings.Contains(err.Error(), "binlog_format = ROW") {
		t.Fatalf("CheckLog on binlog_format=MIXED = %v, want ErrLogUnavailable naming binlog_format", err)
	}
	e.exec("SET GLOBAL binlog_format = 'ROW'")
	e.exec("CREATE USER plain@'%'")
	e.exec("GRANT ALL ON herald.* TO plain@'%'")
	plain, err := binlog.Open(context.Background(), strings.Replace(e.dsn, "root@", "plain@", 1), mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.CheckLog(context.Background()); !errors.Is(err, store.ErrLogUnavailable) || !strings.Contains(err.Error(), "REPLICATION SLAVE") {
		t.Fatalf("CheckLog without privileges = %v, want ErrLogUnavailable naming REPLICATION SLAVE", err)
	}
	e.exec("GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO plain@'%'")
	if err := plain.CheckLog(context.Background()); err != nil {
		t.Fatalf("CheckLog with the documented grants = %v", err)
	}
	testenv.RequireDB(t, "mysql", testenv.MySQLDSN(), "MySQL")
	shared, err := binlog.Open(context.Background(), testenv.MySQLDSN(), mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	var on string
	shared.DB().QueryRow("SELECT @@log_bin").Scan(&on)
	if on == "1" {
		t.Skip("the shared server runs with a binary log")
	}
	if err := shared.CheckLog(context.Background()); !errors.Is(err, store.ErrLogUnavailable) || !strings.Contains(err.Error(), "log_bin") {
		t.Fatalf("CheckLog without a binary log = %v, want ErrLogUnavailable naming log_bin", err)
	}
}

// Rule: an idle stream stays open past the reader's silence limit (10 s):
// the server's heartbeats keep it alive, and an event after the silence
// arrives.
func TestBinlogIdleStreamStaysOpen(t *testing.T) {
	e := newBinlogEnv(t)
	// A long lease: the lease renewals (every lease/3) are binlog events
	// too, and must not be what keeps the stream from falling silent.
	p := e.params("idle")
	p.Lease = time.Minute
	st, err := e.s.OpenLog(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Next returns at least every lease/3 to renew the lease: call it
	// until the silence limit is well past.
	for start := time.Now(); time.Since(start) < 12*time.Second; {
		if b, err := st.Next(context.Background(), 100, 12*time.Second); err != nil || len(b.Records) != 0 {
			t.Fatalf("an idle stream after %s: %v, %v; want no events and no error", time.Since(start), b.Records, err)
		}
	}
	e.insert("late")
	if got := read(t, st, 1); strings.Join(got, " ") != "late" {
		t.Fatalf("after the silence the stream read %v", got)
	}
}

// Rule: a log event that failed and is handed to the polling workers
// keeps its failure in the row's attempt history, as a polling worker's
// failure does: attempt 1 with the broker's error, then attempt 2.
func TestBinlogHandOverKeepsAttemptErrors(t *testing.T) {
	e := newBinlogEnv(t)
	st := e.open("hand")
	e.insert("h1")
	b, err := st.Next(context.Background(), 100, 10*time.Second)
	if err != nil || len(b.Records) != 1 {
		t.Fatalf("read %v, %v", b.Records, err)
	}
	for _, msg := range []string{"broker said no", "broker said no again"} {
		f := store.LogFailure{Record: b.Records[0], Error: msg, Attempted: true, RetryIn: time.Hour}
		if err := e.s.HandOver(context.Background(), e.table, "hand", []store.LogFailure{f}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := e.s.Get(context.Background(), e.table, "h1")
	if err != nil || len(r.Errors) != 2 || r.Errors[0].Attempt != 1 || r.Errors[0].Error != "broker said no" ||
		r.Errors[1].Attempt != 2 || r.Errors[1].Error != "broker said no again" {
		t.Fatalf("attempt history after two hand-overs = %+v, %v; want attempts 1 and 2 with their errors", r.Errors, err)
	}
}
