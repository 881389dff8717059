package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/internal/testenv"
	. "github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
	"github.com/heraldhq/herald/store/sqlite"
)

// adoptDB is one database for the tests of mapped tables: its store, the
// DDL of a wallet_outbox-shaped table (an existing service's outbox, with
// its own column names, status values and epoch-millisecond times) and
// the pieces of that service's own worker's SQL (oldWorker).
type adoptDB struct {
	name  string
	open  func(t testing.TB) store.Store
	ddl   []string // {{T}} is the table
	nowMs string   // the database clock in epoch ms
	lock  string   // a claim's locking suffix
	param func(n int) string
	// datetime is the DDL of a smaller table with datetime columns, and
	// nowTime the clock in their type; none on SQLite.
	datetime []string
	nowTime  string
}

var adoptDBs = []adoptDB{
	{name: "SQLite", open: func(t testing.TB) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "wallet.db"), sqlite.Options{SynchronousNormal: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, ddl: []string{`CREATE TABLE {{T}} (
  app_code TEXT NOT NULL, event_id TEXT NOT NULL PRIMARY KEY, event_type TEXT NOT NULL,
  transaction_id TEXT NOT NULL, command_id TEXT NOT NULL, user_id INTEGER NOT NULL, asset_type TEXT NOT NULL,
  available_delta INTEGER NOT NULL, frozen_delta INTEGER NOT NULL, payload_json TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL, status TEXT NOT NULL DEFAULT 'pending', retry_count INTEGER NOT NULL DEFAULT 0,
  next_retry_at_ms INTEGER NOT NULL DEFAULT 0, lock_until_ms INTEGER NOT NULL DEFAULT 0,
  worker_id TEXT NOT NULL DEFAULT '', last_error TEXT NOT NULL DEFAULT '')`,
		`CREATE INDEX {{N}}_due ON {{T}} (status, next_retry_at_ms)`,
		`CREATE INDEX {{N}}_lock ON {{T}} (status, lock_until_ms)`},
		nowMs: sqlite.NowMillis, param: func(int) string { return "?" }},
	{name: "MariaDB", open: func(t testing.TB) store.Store {
		s, err := mysql.Open(context.Background(), testenv.MySQLDSN(), mysql.Options{})
		if err != nil {
			testenv.Unreachable(t, "MySQL/MariaDB", err)
		}
		return s
	}, ddl: []string{"CREATE TABLE {{T}} (" + `
  app_code VARCHAR(32) NOT NULL, event_id VARCHAR(64) NOT NULL PRIMARY KEY, event_type VARCHAR(64) NOT NULL,
  transaction_id VARCHAR(64) NOT NULL, command_id VARCHAR(64) NOT NULL, user_id BIGINT NOT NULL,
  asset_type VARCHAR(16) NOT NULL, available_delta BIGINT NOT NULL, frozen_delta BIGINT NOT NULL,
  payload_json JSON NOT NULL, created_at_ms BIGINT NOT NULL, status VARCHAR(16) NOT NULL DEFAULT 'pending',
  retry_count INT NOT NULL DEFAULT 0, next_retry_at_ms BIGINT NOT NULL DEFAULT 0, lock_until_ms BIGINT NOT NULL DEFAULT 0,
  worker_id VARCHAR(128) NOT NULL DEFAULT '', last_error VARCHAR(1024) NOT NULL DEFAULT '',
  KEY {{N}}_due (status, next_retry_at_ms), KEY {{N}}_lock (status, lock_until_ms)
) ENGINE=InnoDB`},
		nowMs: "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)",
		lock:  " FOR UPDATE SKIP LOCKED", param: func(int) string { return "?" },
		datetime: []string{"CREATE TABLE {{T}} (" + `
  event_id VARCHAR(64) NOT NULL PRIMARY KEY, event_type VARCHAR(64) NOT NULL, payload_json TEXT NOT NULL,
  created_at DATETIME(3) NOT NULL, status VARCHAR(16) NOT NULL DEFAULT 'pending', retry_count INT NOT NULL DEFAULT 0,
  next_retry_at DATETIME(3) NOT NULL, lock_until DATETIME(3) NULL, worker_id VARCHAR(128) NULL,
  last_error TEXT NULL, KEY {{N}}_due (status, next_retry_at), KEY {{N}}_lock (status, lock_until)) ENGINE=InnoDB`},
		nowTime: "UTC_TIMESTAMP(3)"},
	{name: "PostgreSQL", open: func(t testing.TB) store.Store {
		s, err := postgres.Open(context.Background(), testenv.PostgresDSN(), postgres.Options{})
		if err != nil {
			testenv.Unreachable(t, "PostgreSQL", err)
		}
		return s
	}, ddl: []string{`CREATE TABLE {{T}} (
  app_code TEXT NOT NULL, event_id TEXT NOT NULL PRIMARY KEY, event_type TEXT NOT NULL,
  transaction_id TEXT NOT NULL, command_id TEXT NOT NULL, user_id BIGINT NOT NULL, asset_type TEXT NOT NULL,
  available_delta BIGINT NOT NULL, frozen_delta BIGINT NOT NULL, payload_json JSONB NOT NULL,
  created_at_ms BIGINT NOT NULL, status TEXT NOT NULL DEFAULT 'pending', retry_count INT NOT NULL DEFAULT 0,
  next_retry_at_ms BIGINT NOT NULL DEFAULT 0, lock_until_ms BIGINT NOT NULL DEFAULT 0,
  worker_id TEXT NOT NULL DEFAULT '', last_error TEXT NOT NULL DEFAULT '')`,
		`CREATE INDEX {{N}}_due ON {{T}} (status, next_retry_at_ms)`,
		`CREATE INDEX {{N}}_lock ON {{T}} (status, lock_until_ms)`},
		nowMs: "(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
		lock:  " FOR UPDATE SKIP LOCKED", param: func(n int) string { return "$" + strconv.Itoa(n) },
		datetime: []string{`CREATE TABLE {{T}} (
  event_id TEXT NOT NULL PRIMARY KEY, event_type TEXT NOT NULL, payload_json TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL, status TEXT NOT NULL DEFAULT 'pending', retry_count INT NOT NULL DEFAULT 0,
  next_retry_at TIMESTAMPTZ NOT NULL, lock_until TIMESTAMPTZ, worker_id TEXT, last_error TEXT)`,
			`CREATE INDEX {{N}}_due ON {{T}} (status, next_retry_at)`},
		nowTime: "clock_timestamp()"},
}

// walletMapping is how a lane reads the wallet table (docs/adopt.md).
var walletMapping = store.Mapping{
	Columns: store.Columns{ID: "event_id", Type: "event_type", Tenant: "app_code", Key: "user_id",
		Payload: "payload_json", CreatedAt: "created_at_ms", Status: "status", Attempts: "retry_count",
		NextAttempt: "next_retry_at_ms", LeaseUntil: "lock_until_ms", LeaseOwner: "worker_id", LastError: "last_error"},
	Statuses: store.Statuses{Pending: store.StatusValues{"pending", "retryable"},
		InFlight: "delivering", Delivered: "delivered", Dead: "dead"},
	TimeUnit: store.TimeEpochMillis,
}

// wallet is one test's store and wallet table on one database.
type wallet struct {
	t     testing.TB
	db    adoptDB
	store store.Store
	table string
}

func newWallet(t testing.TB, db adoptDB) *wallet { return newWalletDDL(t, db, db.ddl) }

func newWalletDDL(t testing.TB, db adoptDB, ddl []string) *wallet {
	t.Helper()
	s := db.open(t)
	t.Cleanup(func() { s.Close() })
	w := &wallet{t: t, db: db, store: s, table: testenv.Name("wallet_outbox")}
	quote := `"`
	if db.name == "MariaDB" {
		quote = "`"
	}
	r := strings.NewReplacer("{{T}}", quote+w.table+quote, "{{N}}", w.table)
	for _, stmt := range ddl {
		if _, err := s.DB().Exec(r.Replace(stmt)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = s.DB().Exec("DROP TABLE " + quote + w.table + quote) })
	return w
}

// q is query with ? spelled as the database's placeholders and {{T}} the
// table.
func (w *wallet) q(query string) string {
	n := 0
	var b strings.Builder
	for _, r := range strings.ReplaceAll(query, "{{T}}", w.table) {
		if r == '?' {
			n++
			b.WriteString(w.db.param(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// insert writes n rows as the wallet service does, ids "<prefix>-<i>",
// of users from user on (a user is a partition key: the memory broker
// fails the rest of a key's batch after a failure, so the tests give
// failing rows users of their own).
func (w *wallet) insert(prefix, eventType string, user, n int) []string {
	w.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%04d", prefix, i)
		uid := user + i%7
		if user != walletUsers {
			uid = user + i
		}
		payload := fmt.Sprintf(`{"event_id":"%s","user_id":%d,"asset_type":"GOLD","available_delta":-%d}`, ids[i], uid, i)
		_, err := w.store.DB().Exec(w.q(`INSERT INTO {{T}} (app_code, event_id, event_type, transaction_id, command_id,
  user_id, asset_type, available_delta, frozen_delta, payload_json, created_at_ms, next_retry_at_ms)
VALUES (?, ?, ?, ?, ?, ?, 'GOLD', ?, 0, ?, `+w.db.nowMs+`, `+w.db.nowMs+`)`),
			"voice", ids[i], eventType, "tx-"+ids[i], "cmd-"+ids[i], uid, -i, payload)
		if err != nil {
			w.t.Fatal(err)
		}
	}
	return ids
}

// walletUsers are the users of the rows that publish fine: seven of them.
const walletUsers = 1000

// row is what the tests read back of a wallet row.
type row struct {
	status, worker, lastError string
	retries                   int
}

func (w *wallet) rows() map[string]row {
	w.t.Helper()
	rs, err := w.store.DB().Query(w.q(`SELECT event_id, status, retry_count, worker_id, last_error FROM {{T}}`))
	if err != nil {
		w.t.Fatal(err)
	}
	defer rs.Close()
	out := map[string]row{}
	for rs.Next() {
		var id string
		var r row
		if err := rs.Scan(&id, &r.status, &r.retries, &r.worker, &r.lastError); err != nil {
			w.t.Fatal(err)
		}
		out[id] = r
	}
	if err := rs.Err(); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// countStatus counts the rows in status.
func (w *wallet) countStatus(status string) int {
	n := 0
	for _, r := range w.rows() {
		if r.status == status {
			n++
		}
	}
	return n
}

// lane is a fast lane on the wallet table.
func (w *wallet) lane(pub broker.Publisher) Lane {
	m := walletMapping
	return Lane{Name: "wallet", Table: w.table, Publisher: pub, Destination: broker.MustParseTemplate("wallet.{event_type}"),
		Concurrency: 2, BatchSize: 50, PollInterval: 20 * time.Millisecond, PublishTimeout: time.Second,
		Retry:   Retry{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, MaxAttempts: 3},
		Columns: m.Columns, Statuses: m.Statuses, TimeUnit: m.TimeUnit}
}

// runRelay relays the wallet table's lanes until the test ends.
func (w *wallet) runRelay(lanes ...Lane) *running {
	e := &env{t: w.t, store: w.store, table: w.table}
	return e.startWith(Config{Lanes: lanes})
}

// Rule: a lane with a columns mapping relays a table Herald did not make,
// as it is: every row published with the body, type, tenant and key of its
// own columns, marked delivered in its own status column; failures counted
// in its retry counter and retried under its retry status, rows that fail
// for good (or too often) marked dead with the error kept.
func TestAdoptWalletTable(t *testing.T) {
	for _, db := range adoptDBs {
		t.Run(db.name, func(t *testing.T) { testAdoptWallet(t, db) })
	}
}

func testAdoptWallet(t *testing.T, db adoptDB) {
	w := newWallet(t, db)
	ctx := context.Background()
	if err := store.MapTable(w.store, w.table, walletMapping); err != nil {
		t.Fatal(err)
	}
	if err := w.store.Migrate(ctx, w.table); err != nil {
		t.Fatalf("migrate on a mapped table (only Herald's own tables, then a check): %v", err)
	}
	debited := w.insert("debit", "WalletGiftDebited", walletUsers, 300)
	flaky := w.insert("flaky", "WalletFrozen", 2000, 5)
	poison := w.insert("poison", "WalletPoison", 3000, 3)
	tired := w.insert("tired", "WalletTired", 4000, 2)
	// A row the old worker took and never finished (it crashed): Herald
	// claims it once its lock ran out.
	abandoned := debited[42]
	if _, err := w.store.DB().Exec(w.q(`UPDATE {{T}} SET status = 'delivering', worker_id = 'crashed-node',
  lock_until_ms = `+db.nowMs+` - 1000 WHERE event_id = ?`), abandoned); err != nil {
		t.Fatal(err)
	}
	pub := memory.New(memory.Config{})
	for _, id := range flaky {
		pub.FailEvent(id, 2, errors.New("broker hiccup"))
	}
	for _, id := range poison {
		pub.FailEvent(id, 1, herald.Permanent(errors.New("rejected: bad wallet event")))
	}
	for _, id := range tired {
		pub.FailEvent(id, 10, errors.New("keeps failing"))
	}
	r := w.runRelay(w.lane(pub))
	want := len(debited) + len(flaky)
	waitFor(t, 60*time.Second, "every good row delivered and every bad one dead", func() bool {
		return w.countStatus("delivered") == want && w.countStatus("dead") == len(poison)+len(tired)
	})
	r.stop()

	rows := w.rows()
	for _, id := range append(append([]string{}, debited...), flaky...) {
		if n := pub.Count(id); n != 1 {
			t.Errorf("%s published %d times, want once", id, n)
		}
		if rows[id].status != "delivered" {
			t.Errorf("%s: status %q, want delivered", id, rows[id].status)
		}
	}
	for _, id := range debited {
		if rows[id].retries != 0 {
			t.Errorf("%s: retry_count %d after a first-time delivery, want 0", id, rows[id].retries)
		}
		if !strings.HasPrefix(rows[id].worker, "test/wallet-") || !strings.Contains(rows[id].worker, "#") {
			t.Errorf("%s: worker_id %q, want the claiming worker's id and token", id, rows[id].worker)
		}
	}
	for _, id := range flaky {
		if rows[id].retries != 2 || rows[id].lastError != "broker hiccup" {
			t.Errorf("%s: retry_count %d, last_error %q; want 2 failures counted and the last one kept", id, rows[id].retries, rows[id].lastError)
		}
	}
	for _, id := range poison {
		if rows[id].retries != 1 || !strings.Contains(rows[id].lastError, "bad wallet event") {
			t.Errorf("%s: retry_count %d, last_error %q; want dead after 1 permanent failure", id, rows[id].retries, rows[id].lastError)
		}
	}
	for _, id := range tired {
		if rows[id].retries != 3 || rows[id].status != "dead" {
			t.Errorf("%s: retry_count %d, status %q; want dead after max_attempts 3", id, rows[id].retries, rows[id].status)
		}
	}
	checkWalletMessage(t, pub, debited[7])
	st, err := w.store.Stats(ctx, store.Scope{Table: w.table})
	if err != nil || st.Delivered != int64(want) || st.Dead != int64(len(poison)+len(tired)) || st.Pending+st.InFlight != 0 {
		t.Errorf("stats = %+v, %v", st, err)
	}
}

// checkWalletMessage checks that the message of id carries its row's
// columns: body, type, tenant (app_code) and key (user_id).
func checkWalletMessage(t *testing.T, pub *memory.Publisher, id string) {
	t.Helper()
	for _, rec := range pub.Records() {
		ev := rec.Message.Event
		if ev.ID != id {
			continue
		}
		var body struct {
			EventID string `json:"event_id"`
		}
		// PostgreSQL's jsonb keeps the document, not its spelling.
		_ = json.Unmarshal(ev.Payload, &body)
		if ev.Type != "WalletGiftDebited" || ev.Tenant != "voice" || ev.PartitionKey != "1000" ||
			rec.Message.Destination != "wallet.WalletGiftDebited" || body.EventID != id {
			t.Errorf("message of %s = %+v (destination %s, payload %s)", id, ev, rec.Message.Destination, ev.Payload)
		}
		return
	}
	t.Errorf("no message of %s", id)
}

// oldWorker stands in for the service's own outbox worker: it claims
// rows as that worker does (pending or retryable and due, FOR UPDATE SKIP
// LOCKED, then status delivering with its worker_id and a lock_until_ms),
// publishes them to pub one by one and marks them delivered, until ctx
// ends. It returns the event ids it published. firstClaimed, when not nil,
// is called once after its first claim that took rows, before it publishes
// them.
func (w *wallet) oldWorker(ctx context.Context, pub *memory.Publisher, id string, firstClaimed func()) (published []string, err error) {
	defer func() {
		if ctx.Err() != nil {
			// Stopped: what failed failed for that (database/sql rolls
			// back a transaction whose context ends, which Commit reports).
			err = nil
		}
	}()
	for ctx.Err() == nil {
		ids, err := w.oldClaim(ctx, id, 20)
		if err != nil {
			return published, err
		}
		if len(ids) > 0 && firstClaimed != nil {
			firstClaimed()
			firstClaimed = nil
		}
		for _, ev := range ids {
			msg := broker.Message{Event: herald.Event{ID: ev, Topic: "wallet", Type: "WalletGiftDebited", Payload: []byte(`{}`)},
				Destination: "wallet.old"}
			if res := pub.Publish(ctx, []broker.Message{msg}); res[0].Err != nil {
				return published, res[0].Err
			}
			published = append(published, ev)
			if _, err := w.store.DB().ExecContext(ctx, w.q(`UPDATE {{T}} SET status = 'delivered'
WHERE event_id = ? AND worker_id = ? AND status = 'delivering'`), ev, id); err != nil {
				return published, err
			}
		}
		if len(ids) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return published, nil
}

// deliveredBy counts the delivered rows whose worker id starts with prefix.
func (w *wallet) deliveredBy(prefix string) int {
	n := 0
	for _, r := range w.rows() {
		if r.status == "delivered" && strings.HasPrefix(r.worker, prefix) {
			n++
		}
	}
	return n
}

// oldClaim is the old worker's claim of up to limit rows.
func (w *wallet) oldClaim(ctx context.Context, worker string, limit int) ([]string, error) {
	tx, err := w.store.DB().BeginTx(ctx, nil) // BEGIN IMMEDIATE on SQLite (the store's pool)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, w.q(`SELECT event_id FROM {{T}}
WHERE status IN ('pending', 'retryable') AND next_retry_at_ms <= `+w.db.nowMs+`
ORDER BY next_retry_at_ms LIMIT ?`+w.db.lock), limit)
	if err != nil {
		return nil, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, w.q(`UPDATE {{T}} SET status = 'delivering', worker_id = ?,
  lock_until_ms = `+w.db.nowMs+` + 30000 WHERE event_id = ?`), worker, id); err != nil {
			return nil, err
		}
	}
	return ids, tx.Commit()
}

// Rule: Herald and the service's own worker can relay one table at the
// same time (the cut-over of docs/adopt.md): both claim with the same
// lock column and SKIP LOCKED, so every row is published, and none by
// both (no lease runs out here: the old worker's lock is 30 s, Herald's
// lease 3 s against publishes of microseconds).
func TestAdoptSharedWithOldWorker(t *testing.T) {
	for _, db := range adoptDBs {
		t.Run(db.name, func(t *testing.T) { testAdoptShared(t, db) })
	}
}

func testAdoptShared(t *testing.T, db adoptDB) {
	w := newWallet(t, db)
	const n = 600
	ids := w.insert("shared", "WalletGiftDebited", walletUsers, n)
	pub := memory.New(memory.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		ids []string
		err error
	}
	// The old worker holds its first batch until Herald has delivered a
	// row, then both go on: each takes rows whatever the machine's load
	// (CI once saw the old worker take all 600 before Herald's first
	// claim), and the rest of the run shares the table.
	old := make(chan result, 1)
	held, resume := make(chan struct{}), make(chan struct{})
	go func() {
		published, err := w.oldWorker(ctx, pub, "wallet-node-1", func() {
			close(held)
			select {
			case <-resume:
			case <-ctx.Done():
			}
		})
		old <- result{published, err}
	}()
	<-held
	r := w.runRelay(w.lane(pub))
	waitFor(t, 60*time.Second, "a row delivered by Herald", func() bool { return w.deliveredBy("test/") > 0 })
	close(resume)
	waitFor(t, 60*time.Second, "every row delivered", func() bool { return w.countStatus("delivered") == n })
	r.stop()
	cancel()
	res := <-old
	if res.err != nil {
		t.Fatalf("old worker: %v", res.err)
	}
	byOld := map[string]bool{}
	for _, id := range res.ids {
		byOld[id] = true
	}
	rows := w.rows()
	twice, byHerald := 0, 0
	for _, id := range ids {
		if c := pub.Count(id); c != 1 {
			twice++
			t.Errorf("%s published %d times", id, c)
		}
		if herald := strings.HasPrefix(rows[id].worker, "test/"); herald {
			byHerald++
			if byOld[id] {
				t.Errorf("%s published by both the old worker and Herald", id)
			}
		} else if !byOld[id] || rows[id].worker != "wallet-node-1" {
			t.Errorf("%s: delivered by %q, which did not publish it", id, rows[id].worker)
		}
	}
	t.Logf("%d rows: %d published by the old worker, %d by Herald, %d more than once", n, len(byOld), byHerald, twice)
	if len(byOld) == 0 || byHerald == 0 || len(byOld)+byHerald != n {
		t.Errorf("old worker %d + Herald %d rows, want both > 0 and %d in all", len(byOld), byHerald, n)
	}
}

// Rule: a mapped table whose times are datetimes (time_unit: datetime:
// DATETIME in UTC on MariaDB, timestamptz on PostgreSQL) is claimed when
// due, retried after a backoff on the database clock and reclaimed when a
// lock runs out, with nullable optional columns; SQLite, which has no
// datetime type, refuses the unit.
func TestAdoptDatetimeTable(t *testing.T) {
	for _, db := range adoptDBs {
		t.Run(db.name, func(t *testing.T) { testAdoptDatetime(t, db) })
	}
}

func testAdoptDatetime(t *testing.T, db adoptDB) {
	m := store.Mapping{
		Columns: store.Columns{ID: "event_id", Type: "event_type", Payload: "payload_json", CreatedAt: "created_at",
			Status: "status", Attempts: "retry_count", NextAttempt: "next_retry_at", LeaseUntil: "lock_until",
			LeaseOwner: "worker_id", LastError: "last_error"},
		Statuses: walletMapping.Statuses, TimeUnit: store.TimeDatetime,
	}
	if db.datetime == nil {
		s := db.open(t)
		defer s.Close()
		if err := store.MapTable(s, "events", m); err == nil || !strings.Contains(err.Error(), "time_unit: datetime is not supported") {
			t.Fatalf("datetime on %s: %v, want refused", db.name, err)
		}
		return
	}
	w := newWalletDDL(t, db, db.datetime)
	const n = 40
	for i := range n {
		if _, err := w.store.DB().Exec(w.q(`INSERT INTO {{T}} (event_id, event_type, payload_json, created_at, next_retry_at)
VALUES (?, 'Dated', '{}', `+db.nowTime+`, `+db.nowTime+`)`), fmt.Sprintf("dt-%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.store.DB().Exec(w.q(`UPDATE {{T}} SET status = 'delivering', worker_id = 'crashed-node',
  lock_until = ` + db.nowTime + ` - INTERVAL '1' SECOND WHERE event_id = 'dt-07'`)); err != nil {
		t.Fatal(err)
	}
	pub := memory.New(memory.Config{})
	pub.FailEvent("dt-03", 2, errors.New("broker hiccup"))
	l := w.lane(pub)
	l.Columns, l.Statuses, l.TimeUnit = m.Columns, m.Statuses, m.TimeUnit
	r := w.runRelay(l)
	waitFor(t, 60*time.Second, "every row delivered", func() bool { return w.countStatusDated("delivered") == n })
	r.stop()
	for i := range n {
		if id := fmt.Sprintf("dt-%02d", i); pub.Count(id) != 1 {
			t.Errorf("%s published %d times, want once", id, pub.Count(id))
		}
	}
	var retries int
	if err := w.store.DB().QueryRow(w.q(`SELECT retry_count FROM {{T}} WHERE event_id = 'dt-03'`)).Scan(&retries); err != nil || retries != 2 {
		t.Errorf("dt-03: retry_count %d (%v), want 2", retries, err)
	}
	for _, rec := range pub.Records() {
		if age := time.Since(rec.Message.Event.CreatedAt); age < 0 || age > time.Minute {
			t.Errorf("%s: ce-time %v is not the row's created_at", rec.Message.Event.ID, rec.Message.Event.CreatedAt)
			break
		}
	}
}

// countStatusDated counts the rows in status of a datetime table.
func (w *wallet) countStatusDated(status string) int {
	var n int
	if err := w.store.DB().QueryRow(w.q(`SELECT COUNT(*) FROM {{T}} WHERE status = ?`), status).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

// Rule: on a mapped table without a fence column, a mark by a claim that
// lost its row (its lease ran out and a later claim took the row, even one
// by the same worker id) changes nothing and reports the row lost; the
// later claim's mark goes through.
func TestAdoptFencedWithoutFenceColumn(t *testing.T) {
	for _, db := range adoptDBs {
		t.Run(db.name, func(t *testing.T) {
			w := newWallet(t, db)
			ctx := context.Background()
			if err := store.MapTable(w.store, w.table, walletMapping); err != nil {
				t.Fatal(err)
			}
			w.insert("fence", "WalletGiftDebited", walletUsers, 1)
			// A lease of 40 ms: a claim looks for expired leases at most
			// every lease/4.
			claim := func(token int64) store.Record {
				var recs []store.Record
				waitFor(t, 10*time.Second, fmt.Sprintf("claim %d", token), func() bool {
					var err error
					recs, err = w.store.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: w.table}, Owner: "node/wallet-01",
						Token: token, Lease: 40 * time.Millisecond, Limit: 10})
					if err != nil {
						t.Fatal(err)
					}
					return len(recs) == 1
				})
				return recs[0]
			}
			first := claim(101)
			// The first claim's lease runs out; the same worker claims again.
			second := claim(202)
			lost, err := w.store.Complete(ctx, store.Fence{Table: w.table, Token: 101}, []store.Delivery{{ID: first.ID}})
			if err != nil || len(lost) != 1 || lost[0] != first.ID {
				t.Fatalf("the stale claim's mark: lost %v, %v; want its row lost", lost, err)
			}
			if r := w.rows()["fence-0000"]; r.status != "delivering" || !strings.HasSuffix(r.worker, "#"+strconv.FormatInt(202, 36)) {
				t.Fatalf("after the stale mark the row is %+v, want still held by the second claim", r)
			}
			lost, err = w.store.Complete(ctx, store.Fence{Table: w.table, Token: 202}, []store.Delivery{{ID: second.ID}})
			if err != nil || len(lost) != 0 || w.rows()["fence-0000"].status != "delivered" {
				t.Fatalf("the live claim's mark: lost %v, %v, row %+v", lost, err, w.rows()["fence-0000"])
			}
		})
	}
}

// walletBody is a wallet message built field by field from the row.
var walletBody = []store.BodyField{
	{Field: "eventId", Column: "event_id"}, {Field: "eventType", Column: "event_type"},
	{Field: "appCode", Column: "app_code"}, {Field: "transactionId", Column: "transaction_id"},
	{Field: "commandId", Column: "command_id"}, {Field: "userId", Column: "user_id"},
	{Field: "assetType", Column: "asset_type"}, {Field: "availableDelta", Column: "available_delta"},
	{Field: "frozenDelta", Column: "frozen_delta"}, {Field: "source", Const: "wallet"},
	{Field: "payload", Payload: store.PayloadRaw},
}

// Rule: a body template builds each message's body from the row, field by
// field in its order: columns (numbers as numbers), constants, and the
// payload column embedded as JSON. A row whose payload is not JSON goes
// dead unpublished, naming the column, and the lane goes on.
func TestAdoptBodyTemplate(t *testing.T) {
	for _, db := range adoptDBs {
		t.Run(db.name, func(t *testing.T) {
			w := newWallet(t, db)
			ids := w.insert("tpl", "WalletGiftDebited", walletUsers, 10)
			var bad string
			if db.name == "SQLite" { // the servers' JSON columns refuse such a row
				bad = w.insert("badjson", "WalletGiftDebited", 5000, 1)[0]
				if _, err := w.store.DB().Exec(w.q(`UPDATE {{T}} SET payload_json = '{not json' WHERE event_id = ?`), bad); err != nil {
					t.Fatal(err)
				}
			}
			pub := memory.New(memory.Config{})
			l := w.lane(pub)
			l.Body = walletBody
			r := w.runRelay(l)
			waitFor(t, 60*time.Second, "every row finished", func() bool {
				return w.countStatus("delivered") == len(ids) && (bad == "" || w.countStatus("dead") == 1)
			})
			r.stop()
			var payload string
			if err := w.store.DB().QueryRow(w.q(`SELECT payload_json FROM {{T}} WHERE event_id = ?`), ids[3]).Scan(&payload); err != nil {
				t.Fatal(err)
			}
			want := `{"eventId":"tpl-0003","eventType":"WalletGiftDebited","appCode":"voice","transactionId":"tx-tpl-0003",` +
				`"commandId":"cmd-tpl-0003","userId":1003,"assetType":"GOLD","availableDelta":-3,"frozenDelta":0,` +
				`"source":"wallet","payload":` + payload + `}`
			found := false
			for _, rec := range pub.Records() {
				if rec.Message.Event.ID == ids[3] {
					found = true
					if string(rec.Message.Event.Payload) != want {
						t.Errorf("body\n got %s\nwant %s", rec.Message.Event.Payload, want)
					}
				}
			}
			if !found {
				t.Errorf("no message of %s", ids[3])
			}
			if bad != "" {
				if r := w.rows()[bad]; r.status != "dead" || !strings.Contains(r.lastError, "column payload_json is not valid JSON") || pub.Count(bad) != 0 {
					t.Errorf("the row with a bad payload: %+v, published %d times", r, pub.Count(bad))
				}
			}
		})
	}
}
