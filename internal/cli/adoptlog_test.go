package cli

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker/natsembed"
	"github.com/heraldhq/herald/internal/testenv"
)

// adoptLogDDL is a service's own outbox table, in SQL both MariaDB and
// PostgreSQL take.
const adoptLogDDL = `CREATE TABLE wallet_log_outbox (
  app_code VARCHAR(32) NOT NULL, event_id VARCHAR(64) NOT NULL PRIMARY KEY, event_type VARCHAR(64) NOT NULL,
  user_id BIGINT NOT NULL, available_delta BIGINT NOT NULL, payload_json TEXT NOT NULL,
  created_at_ms BIGINT NOT NULL, status VARCHAR(16) NOT NULL DEFAULT 'pending', retry_count INT NOT NULL DEFAULT 0,
  next_retry_at_ms BIGINT NOT NULL DEFAULT 0, lock_until_ms BIGINT NOT NULL DEFAULT 0,
  worker_id VARCHAR(128) NOT NULL DEFAULT '', last_error TEXT)`

// adoptLogConfig writes a config with one log lane on the mapped table,
// its body built by a template, to NATS at natsURL.
func adoptLogConfig(t *testing.T, dir, driver, dsn, natsURL, onDelivered string) string {
	t.Helper()
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, fmt.Sprintf(`
store: {driver: %s, dsn: %q}
brokers:
  events: {type: nats, url: %q, stream: ADOPTLOG, subjects: ["wallet.>"], create_stream: true}
lanes:
  - name: wallet
    table: wallet_log_outbox
    source: log
    on_delivered: %s
    destination: "wallet.{event_type}"
    publish_timeout: 500ms
    lease: 2s
    poll_interval: 100ms
    columns: {id: event_id, type: event_type, tenant: app_code, key: user_id, payload: payload_json,
      created_at: created_at_ms, status: status, attempts: retry_count, next_attempt: next_retry_at_ms,
      lease_until: lock_until_ms, lease_owner: worker_id, last_error: last_error}
    statuses: {pending: [pending, retryable], in_flight: delivering, delivered: delivered, dead: dead}
    time_unit: epoch_ms
    body:
      - {field: eventId, column: event_id}
      - {field: userId, column: user_id}
      - {field: availableDelta, column: available_delta}
      - {field: source, const: wallet}
      - {field: payload, payload: raw}
`, driver, dsn, natsURL, onDelivered))
	return cfg
}

// adoptLogInsert commits rows from..to-1 of the wallet table, three to a
// transaction, with ? placeholders spelled by ph.
func adoptLogInsert(t *testing.T, db *sql.DB, ph func(i int) string, from, to int) {
	t.Helper()
	q := "INSERT INTO wallet_log_outbox (app_code, event_id, event_type, user_id, available_delta, payload_json, created_at_ms) VALUES ('voice', " +
		ph(1) + ", 'WalletGiftDebited', " + ph(2) + ", " + ph(3) + ", " + ph(4) + ", 1764900000000)"
	for i := from; i < to; i += 3 {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for j := i; j < min(i+3, to); j++ {
			if _, err := tx.Exec(q, fmt.Sprintf("alog-%03d", j), 1000+j, -j, fmt.Sprintf(`{"n":%d}`, j)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// adoptLogWant is row i's message body, as the template builds it.
func adoptLogWant(i int) string {
	return fmt.Sprintf(`{"eventId":"alog-%03d","userId":%d,"availableDelta":%d,"source":"wallet","payload":{"n":%d}}`, i, 1000+i, -i, i)
}

// adoptLogRun runs `herald run` on a mapped log lane over db: rows
// committed before its first start (handed to its polling workers), rows
// committed while it reads, and one whose payload the template cannot
// embed. Every good row reaches the broker once with the template's body;
// the bad one goes dead naming the column. It returns the child's output.
func adoptLogRun(t *testing.T, db *sql.DB, ph func(int) string, dir, cfg, natsURL string, delivered func() bool) string {
	t.Helper()
	const before, total = 6, 60
	adoptLogInsert(t, db, ph, 0, before)
	if code, out := runChildSync(t, dir, "migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: exit %d\n%s", code, out)
	}
	run := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 60*time.Second, "the log reader active", func() bool { return strings.Contains(run.stderr.String(), "log reader active") })
	adoptLogInsert(t, db, ph, before, total)
	if _, err := db.Exec("INSERT INTO wallet_log_outbox (app_code, event_id, event_type, user_id, available_delta, payload_json, created_at_ms) VALUES ('voice', 'alog-bad', 'WalletGiftDebited', 1, 0, 'not json', 0)"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "every row settled", func() bool {
		var dead int
		_ = db.QueryRow("SELECT COUNT(*) FROM wallet_log_outbox WHERE status = 'dead'").Scan(&dead)
		return dead == 1 && delivered()
	})
	n := streamLen(t, natsURL, "ADOPTLOG")
	run.terminate(t)
	seen := map[string]int{}
	for _, m := range readStream(t, natsURL, "ADOPTLOG", n) {
		var b struct{ EventID string }
		if err := json.Unmarshal(m.Data, &b); err != nil {
			t.Fatalf("a message that is not the template's JSON: %q", m.Data)
		}
		i, _ := strconv.Atoi(strings.TrimPrefix(b.EventID, "alog-"))
		if seen[b.EventID]++; string(m.Data) != adoptLogWant(i) {
			t.Errorf("body of %s:\n got %s\nwant %s", b.EventID, m.Data, adoptLogWant(i))
		}
	}
	for i := range total {
		if id := fmt.Sprintf("alog-%03d", i); seen[id] != 1 {
			t.Errorf("%s published %d times, want once", id, seen[id])
		}
	}
	if len(seen) != total || seen["alog-bad"] != 0 {
		t.Errorf("the broker has %d distinct events (bad one %d times), want %d and none", len(seen), seen["alog-bad"], total)
	}
	var lastErr string
	if err := db.QueryRow("SELECT last_error FROM wallet_log_outbox WHERE event_id = 'alog-bad'").Scan(&lastErr); err != nil ||
		!strings.Contains(lastErr, "payload_json") {
		t.Errorf("the bad row's last_error is %q (%v), want it to name payload_json", lastErr, err)
	}
	return run.stderr.String()
}

// countStatus counts db's wallet rows in status.
func countStatus(db *sql.DB, status string) int {
	var n int
	_ = db.QueryRow("SELECT COUNT(*) FROM wallet_log_outbox WHERE status = '" + status + "'").Scan(&n)
	return n
}

// Rule: a binlog lane on a mapped MariaDB table publishes every row the
// service inserts once, with the body template's message, and marks each
// delivered in the table's own status column (on_delivered: mark); the
// rows committed before its first start are handed to its polling
// workers, and a row the template cannot build goes dead.
func TestAdoptLogBinlogMarksStatus(t *testing.T) {
	dir := t.TempDir()
	_, dsn := testenv.NewBinlogMariaDB(t)
	srv, err := natsembed.Start(natsembed.Config{Dir: filepath.Join(dir, "nats"), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(adoptLogDDL); err != nil {
		t.Fatal(err)
	}
	cfg := adoptLogConfig(t, dir, "mysql", dsn, srv.ClientURL(), "mark")
	adoptLogRun(t, db, func(int) string { return "?" }, dir, cfg, srv.ClientURL(), func() bool {
		return countStatus(db, "delivered") == 60
	})
	if n := countStatus(db, "pending") + countStatus(db, "retryable") + countStatus(db, "delivering"); n != 0 {
		t.Errorf("%d rows not settled, want none", n)
	}
}

// Rule: a logical-replication lane on a mapped PostgreSQL table publishes
// every row the service inserts once, with the body template's message;
// with on_delivered: leave it leaves the rows it published in their
// pending status for the table's own cleanup, and marks only what its
// polling workers delivered (the rows from before its first start) and
// the row that went dead.
func TestAdoptLogLogicalLeavesRows(t *testing.T) {
	dir, dsn, natsURL := logicalPostgresAndNATS(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(adoptLogDDL); err != nil {
		t.Fatal(err)
	}
	cfg := adoptLogConfig(t, dir, "postgres", dsn, natsURL, "leave")
	ph := func(i int) string { return fmt.Sprintf("$%d", i) }
	adoptLogRun(t, db, ph, dir, cfg, natsURL, func() bool {
		return countStatus(db, "delivered") == 6 && countStatus(db, "pending") == 54
	})
	if n := countStatus(db, "retryable") + countStatus(db, "delivering"); n != 0 {
		t.Errorf("%d rows handed over or in flight, want none", n)
	}
}
