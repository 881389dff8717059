package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
)

// projectionsConfig is a config file with a wallet lane on RocketMQ and two
// configured projections: one fed from the RocketMQ topic, one scanning
// the outbox table; each inserts the event id and a payload field.
func projectionsConfig(t *testing.T, dir, nameServer, statement string) string {
	t.Helper()
	cfg := `store: {driver: sqlite, dsn: ` + filepath.Join(dir, "h.db") + `}
brokers:
  mq: {type: rocketmq, name_servers: ["` + nameServer + `"], send_timeout: 2s}
lanes:
  - {name: wallet, table: main_outbox, broker: mq, destination: wallet_topic, poll_interval: 50ms}
projections:
  - name: from_mq
    source: {broker: mq, destination: wallet_topic}
    include_types: [Crash]
    statements: ["` + strings.ReplaceAll(statement, "{t}", "seen_mq") + `"]
  - name: from_outbox
    source: {outbox: main_outbox}
    statements: ["` + strings.ReplaceAll(statement, "{t}", "seen_ob") + `"]
`
	path := filepath.Join(dir, "herald.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Rule: `herald config check` and `herald run` accept a `projections`
// section; run applies each configured projection's SQL, with named
// parameters from the event, once per event: from a RocketMQ topic and
// from an outbox table.
func TestRunConfiguredProjections(t *testing.T) {
	c, err := rmqfake.New(rmqfake.Options{MaxLongPoll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	dir := t.TempDir()
	cfg := projectionsConfig(t, dir, c.NameServer(), "INSERT INTO {t} (id, i) VALUES (:event.id, :payload.i)")
	if code, out, e := cliRun(t, "config", "check", "--config", cfg); code != 0 {
		t.Fatalf("config check: exit %d: %s %s", code, out, e)
	}
	s := openStore(t, dir)
	if err := s.Migrate(context.Background(), "main_outbox"); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"seen_mq", "seen_ob"} {
		if _, err := s.DB().Exec("CREATE TABLE " + table + " (id TEXT PRIMARY KEY, i INTEGER NOT NULL)"); err != nil {
			t.Fatal(err)
		}
	}
	run := startChild(t, dir, "run", "--config", cfg)
	enqueueMany(t, s, "main_outbox", 40)
	count := func(table string) (n int) {
		_ = s.DB().QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n)
		return n
	}
	waitFor(t, 60*time.Second, "both projections applying 40 events", func() bool {
		return count("seen_mq") == 40 && count("seen_ob") == 40
	})
	var sum int
	if err := s.DB().QueryRow("SELECT SUM(i) FROM seen_mq").Scan(&sum); err != nil || sum != 39*40/2 {
		t.Errorf("[parameters from the payload] sum of i %d, %v; want %d", sum, err, 39*40/2)
	}
	run.terminate(t)
	if !strings.Contains(run.stderr.String(), "projection from_mq running") {
		t.Errorf("herald run did not announce the projection:\n%s", run.stderr.String())
	}
}

// Rule: a configured statement the database cannot prepare (a missing
// table) stops `herald run` at load with exit 2 and the key path; a bad
// entry fails `herald config check` the same way.
func TestRunRefusesBadProjection(t *testing.T) {
	dir := t.TempDir()
	cfg := projectionsConfig(t, dir, "127.0.0.1:1", "INSERT INTO {t} (id) VALUES (:event.id)")
	code, out := runChildSync(t, dir, "run", "--config", cfg)
	if code != 2 || !strings.Contains(out, "projections[0].statements[0]") {
		t.Fatalf("run with a missing table: exit %d, want 2 naming projections[0].statements[0]:\n%s", code, out)
	}
	bad := projectionsConfig(t, dir, "127.0.0.1:1", "INSERT INTO {t} (id) VALUES (:event.nope)")
	if code, _, e := cliRun(t, "config", "check", "--config", bad); code != 2 || !strings.Contains(e, "projections[0].statements[0]") {
		t.Fatalf("config check with an unknown parameter: exit %d: %s", code, e)
	}
}

// Rule: a config with projections and no lanes runs the projections alone:
// no default lane relays the outbox they read (it would mark the
// service's events delivered to an embedded NATS server nobody reads,
// taking them from the relays configured elsewhere), and no embedded
// server starts.
func TestRunProjectionsOnly(t *testing.T) {
	dir := t.TempDir()
	cfg := projectionsOnlyConfig(t, dir)
	s := openStore(t, dir)
	if err := s.Migrate(context.Background(), "herald_outbox"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec("CREATE TABLE seen (id TEXT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	run := startChild(t, dir, "run", "--config", cfg)
	enqueueMany(t, s, "herald_outbox", 10)
	count := func(q string) (n int) {
		_ = s.DB().QueryRow(q).Scan(&n)
		return n
	}
	waitFor(t, 30*time.Second, "the projection applying 10 events", func() bool { return count("SELECT COUNT(*) FROM seen") == 10 })
	run.terminate(t)
	if n := count("SELECT COUNT(*) FROM herald_outbox WHERE status <> 'pending'"); n != 0 {
		t.Errorf("%d outbox rows relayed by a lane nobody configured", n)
	}
	if strings.Contains(run.stderr.String(), "embedded NATS") || strings.Contains(run.stderr.String(), "lane default") {
		t.Errorf("herald run started the defaults' lane or broker:\n%s", run.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "herald-data")); err == nil {
		t.Error("herald run made the embedded server's data directory")
	}
}

// Rule: `herald status` on a config with projections alone, migrated by
// `herald migrate` (which makes no outbox or lane tables then), lists the
// projection and no lanes, without a warning about lane states.
func TestStatusProjectionsOnly(t *testing.T) {
	dir := t.TempDir()
	cfg := projectionsOnlyConfig(t, dir)
	if code, out, e := cliRun(t, "migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: exit %d: %s %s", code, out, e)
	}
	code, out, e := cliRun(t, "status", "--config", cfg)
	if code != 0 || e != "" || !strings.Contains(out, "seen") {
		t.Fatalf("status: exit %d, stdout %q, stderr %q; want the projection listed and nothing on stderr", code, out, e)
	}
}

// projectionsOnlyConfig writes a config of a SQLite store in dir and one
// projection from herald_outbox into a table seen, with no lanes.
func projectionsOnlyConfig(t *testing.T, dir string) string {
	t.Helper()
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, `store: {driver: sqlite, dsn: `+filepath.Join(dir, "h.db")+`}
projections:
  - name: seen
    source: {outbox: herald_outbox}
    statements: ["INSERT INTO seen (id) VALUES (:event.id)"]
`)
	return cfg
}
