package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/postgres"
	"github.com/heraldhq/herald/store/storetest"
)

// logicalEnv is a PostgreSQL of the test's own with wal_level=logical, a
// store on it and a migrated table.
type logicalEnv struct {
	t     *testing.T
	pg    *testenv.Postgres
	dsn   string
	s     *postgres.Store
	db    *sql.DB
	table string
}

// TestLogicalConformance runs the suite's groups of optional abilities on
// a server that serves log lanes: the shared test server's wal_level is
// replica, so TestConformance there checks only that log lanes are refused.
func TestLogicalConformance(t *testing.T) {
	e := newLogicalEnv(t)
	storetest.RunFeatures(t, func(tb testing.TB) store.Store {
		s, err := postgres.Open(context.Background(), e.dsn, postgres.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		return s
	}, features)
}

func newLogicalEnv(t *testing.T) *logicalEnv {
	t.Helper()
	return newLogicalEnvWith(t)
}

// newLogicalEnvWith is newLogicalEnv on a server with extra settings.
func newLogicalEnvWith(t *testing.T, settings ...string) *logicalEnv {
	t.Helper()
	pg, dsn := testenv.NewLogicalPostgres(t, settings...)
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	table := "log_outbox"
	if err := s.Migrate(context.Background(), table); err != nil {
		t.Fatal(err)
	}
	return &logicalEnv{t: t, pg: pg, dsn: dsn, s: s, db: s.DB(), table: table}
}

func (e *logicalEnv) params(lane string) store.LogParams {
	return store.LogParams{Scope: store.Scope{Table: e.table}, Lane: lane, Owner: "test-" + lane, Lease: 10 * time.Second}
}

func (e *logicalEnv) open(lane string) store.LogStream {
	e.t.Helper()
	st, err := e.s.OpenLog(context.Background(), e.params(lane))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { st.Close() })
	return st
}

// insert commits one outbox row per id, in one transaction.
func (e *logicalEnv) insert(ids ...string) {
	e.t.Helper()
	tx, err := e.db.Begin()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := tx.Exec(`INSERT INTO `+e.table+` (event_id, topic, event_type, payload) VALUES ($1, 't', 'T', '\x7b7d')`, id); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		e.t.Fatal(err)
	}
}

// read collects event ids from st until it has n (or fails after 30 s),
// committing each batch.
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

// longTxDelay is how long the long transaction of TestLogicalCommitOrder
// stays open after later ones committed: 30 s with
// HERALD_LOGICAL_LONG_TX=30s; by default 2 s, as the order of the stream,
// not the wall time, is what is tested (the server keeps the open
// transaction's changes from its start either way).
func longTxDelay(t *testing.T) time.Duration {
	if v := os.Getenv("HERALD_LOGICAL_LONG_TX"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("HERALD_LOGICAL_LONG_TX: %v", err)
		}
		return d
	}
	return 2 * time.Second
}

// Rule: a log lane's stream holds every committed event in commit order: a
// long transaction whose INSERT ran first but committed last comes last;
// a rolled-back transaction's row and message never appear; a logical
// message comes with its transaction's rows; a WAL segment switch in the
// middle changes nothing.
func TestLogicalCommitOrder(t *testing.T) {
	e := newLogicalEnv(t)
	st := e.open("order")
	long, err := e.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := long.Exec(`INSERT INTO ` + e.table + ` (event_id, topic, event_type) VALUES ('long', 't', 'T')`); err != nil {
		t.Fatal(err)
	}
	e.insert("a1", "a2")
	rolled, _ := e.db.Begin()
	rolled.Exec(`INSERT INTO ` + e.table + ` (event_id, topic, event_type) VALUES ('rolled-back', 't', 'T')`)
	rolled.Exec(`SELECT pg_logical_emit_message(true, $1, '{"topic":"t","event_type":"T","event_id":"rolled-msg"}')`, postgres.MessagePrefix(e.table))
	rolled.Rollback()
	if _, err := e.db.Exec(`SELECT pg_switch_wal()`); err != nil {
		t.Fatal(err)
	}
	tx, _ := e.db.Begin()
	tx.Exec(`INSERT INTO ` + e.table + ` (event_id, topic, event_type) VALUES ('b1', 't', 'T')`)
	if _, err := tx.Exec(`SELECT pg_logical_emit_message(true, $1, '{"topic":"t","event_type":"T","event_id":"msg","payload":{"n":1}}')`,
		postgres.MessagePrefix(e.table)); err != nil {
		t.Fatal(err)
	}
	tx.Commit()
	got := read(t, st, 4)
	time.Sleep(longTxDelay(t)) // the long transaction stays open: nothing of it may appear meanwhile
	if err := long.Commit(); err != nil {
		t.Fatal(err)
	}
	e.insert("c1")
	got = append(got, read(t, st, 2)...)
	want := "a1 a2 b1 msg long c1"
	if strings.Join(got, " ") != want {
		t.Fatalf("stream = %v, want %s", got, want)
	}
}

// Rule: a lane resumes where it committed, across a reopen and a SIGKILL
// of the database, and a logical message's fields arrive as documented.
func TestLogicalResumeAfterDatabaseKill(t *testing.T) {
	e := newLogicalEnv(t)
	st := e.open("resume")
	e.insert("r1", "r2")
	if got := read(t, st, 2); strings.Join(got, " ") != "r1 r2" {
		t.Fatalf("first read %v", got)
	}
	e.insert("r3") // read but not committed below: must come again
	b, err := st.Next(context.Background(), 100, 5*time.Second)
	if err != nil || len(b.Records) != 1 {
		t.Fatalf("r3: %v %v", b.Records, err)
	}
	e.pg.Kill()
	st.Close()
	e.pg.Start(t)
	testenv.WaitFor(t, 30*time.Second, 100*time.Millisecond, "the store back", func() bool { return e.db.Ping() == nil })
	if _, err := e.db.Exec(`SELECT pg_logical_emit_message(true, $1, $2)`, postgres.MessagePrefix(e.table),
		`{"topic":"orders","event_type":"Placed","partition_key":"k","headers":{"h":"v"},"payload_base64":"AAE="}`); err != nil {
		t.Fatal(err)
	}
	st2 := e.open("resume")
	b, err = st2.Next(context.Background(), 100, 5*time.Second)
	for err == nil && len(b.Records) < 2 {
		var more store.LogBatch
		more, err = st2.Next(context.Background(), 100, 5*time.Second)
		b.Records = append(b.Records, more.Records...)
	}
	if err != nil {
		t.Fatal(err)
	}
	if b.Records[0].Event.ID != "r3" {
		t.Fatalf("after the restart the stream began at %s, want r3 again", b.Records[0].Event.ID)
	}
	m := b.Records[1]
	if m.ID != 0 || m.Event.Topic != "orders" || m.Event.Type != "Placed" || m.Event.PartitionKey != "k" ||
		m.Event.Headers["h"] != "v" || fmt.Sprint(m.Event.Payload) != "[0 1]" || !strings.HasPrefix(m.Event.ID, "lsn-") {
		t.Fatalf("message decoded as %+v", m)
	}
}

// Rule: a dropped slot stops the lane with ErrLogPositionLost naming the
// slot (never a fresh slot that would skip what was written meanwhile);
// the documented recovery (delete the lane's position row) hands every
// unmarked row to the polling workers and streams from then on.
func TestLogicalDroppedSlot(t *testing.T) {
	e := newLogicalEnv(t)
	st := e.open("dropped")
	e.insert("d1")
	read(t, st, 1)
	st.Close()
	// The closed stream's WAL sender may hold the slot a moment longer.
	testenv.WaitFor(t, 10*time.Second, 20*time.Millisecond, "the slot dropped", func() bool {
		_, err := e.db.Exec(`SELECT pg_drop_replication_slot($1)`, postgres.SlotName("dropped"))
		return err == nil
	})
	e.insert("d2") // written while the lane has no slot
	_, err := e.s.OpenLog(context.Background(), e.params("dropped"))
	if !errors.Is(err, store.ErrLogPositionLost) || !strings.Contains(err.Error(), postgres.SlotName("dropped")) {
		t.Fatalf("OpenLog after the slot was dropped: %v, want ErrLogPositionLost naming the slot", err)
	}
	if _, err := e.db.Exec(`DELETE FROM herald_log_lanes WHERE lane = 'dropped'`); err != nil {
		t.Fatal(err)
	}
	st = e.open("dropped")
	var owner string
	if err := e.db.QueryRow(`SELECT lease_owner FROM ` + e.table + ` WHERE event_id = 'd2'`).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	if owner != postgres.LogOwner("dropped") {
		t.Fatalf("d2, written while the slot was gone, has lease_owner %q: not handed over", owner)
	}
	e.insert("d3")
	if got := read(t, st, 1); strings.Join(got, " ") != "d3" {
		t.Fatalf("after recovery the stream read %v, want d3", got)
	}
}

// Rule: a database without wal_level=logical is refused with an error that
// names the setting (the machine's shared server runs wal_level=replica).
func TestLogicalRefusesWalLevelReplica(t *testing.T) {
	s := openStore(t)
	var level string
	if err := s.DB().QueryRow("SHOW wal_level").Scan(&level); err != nil {
		t.Fatal(err)
	}
	if level == "logical" {
		t.Skip("the shared server runs wal_level=logical")
	}
	err := s.CheckLog(context.Background())
	if !errors.Is(err, store.ErrLogUnavailable) || !strings.Contains(err.Error(), "wal_level = logical") {
		t.Fatalf("CheckLog = %v, want ErrLogUnavailable naming wal_level", err)
	}
}

// Rule: the logical message of docs/sql.md, run as written (table renamed),
// is an event of the lane with the documented fields.
func TestLogicalDocsMessage(t *testing.T) {
	doc, err := os.ReadFile("../../docs/sql.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "### Events without a row (log lanes)")
	block := text[start:]
	block = block[strings.Index(block, "```sql\n")+len("```sql\n"):]
	block = block[:strings.Index(block, "```")]
	e := newLogicalEnv(t)
	st := e.open("docs")
	if _, err := e.db.Exec(strings.ReplaceAll(block, "herald:herald_outbox", postgres.MessagePrefix(e.table))); err != nil {
		t.Fatalf("the documented statement: %v", err)
	}
	b, err := st.Next(context.Background(), 100, 10*time.Second)
	if err != nil || len(b.Records) != 1 {
		t.Fatalf("read %v, %v; want the documented event", b.Records, err)
	}
	ev := b.Records[0].Event
	if ev.ID != "0190f5d2-6a7e-7c4e-9a1b-3f2d8e6c1a01" || ev.Topic != "wallet" || ev.Type != "WalletGiftDebited" ||
		ev.PartitionKey != "user-42" || string(ev.Payload) != `{"gift_id": 7, "count": 1}` {
		t.Fatalf("decoded %+v (payload %s)", ev, ev.Payload)
	}
}

// Rule: ResetLog refuses, changing nothing, while a reader still streams
// from the lane's slot after its lease ended (a relay frozen or cut off
// from the database's other connections), and drops the slot once that
// reader is gone.
func TestLogicalResetRefusesSlotInUse(t *testing.T) {
	e := newLogicalEnv(t)
	ctx := context.Background()
	p := e.params("inuse")
	p.Lease = 200 * time.Millisecond
	st, err := e.s.OpenLog(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	count := func(from string) (n int) {
		if err := e.db.QueryRow("SELECT count(*) FROM " + from).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testenv.WaitFor(t, 10*time.Second, 20*time.Millisecond, "the lease ended", func() bool {
		return count("herald_log_lanes WHERE lane = 'inuse' AND lease_until < now()") == 1
	})
	_, err = e.s.ResetLog(ctx, "inuse", false)
	if !errors.Is(err, store.ErrLogLeaseHeld) || !strings.Contains(err.Error(), "is active") {
		t.Fatalf("ResetLog while the slot is streamed: %v, want ErrLogLeaseHeld saying the slot is active", err)
	}
	if n := count("herald_log_lanes WHERE lane = 'inuse'"); n != 1 {
		t.Fatalf("a refused reset left %d positions of the lane, want 1", n)
	}
	st.Close()
	var res store.LogReset
	// The closed stream's WAL sender may hold the slot a moment longer.
	testenv.WaitFor(t, 10*time.Second, 20*time.Millisecond, "the reset done", func() bool {
		res, err = e.s.ResetLog(ctx, "inuse", false)
		return err == nil
	})
	if want := "slot " + postgres.SlotName("inuse"); len(res.Released) != 1 || res.Released[0] != want {
		t.Fatalf("ResetLog released %q, want %q", res.Released, want)
	}
	if n := count("pg_replication_slots WHERE slot_name = '" + postgres.SlotName("inuse") + "'"); n != 0 {
		t.Fatalf("%d slots of the lane after the reset, want none", n)
	}
}
