package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker/natsembed"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
)

// binlogConfig writes a config with one log lane on the MySQL/MariaDB dsn
// to NATS at natsURL.
func binlogConfig(t *testing.T, dir, dsn, natsURL string) string {
	t.Helper()
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, fmt.Sprintf(`
store: {driver: mysql, dsn: %q}
brokers:
  events: {type: nats, url: %q, stream: BINLOG, subjects: ["binlog.>"], create_stream: true}
lanes:
  - {name: main, table: log_outbox, source: log, destination: "binlog.{topic}", batch_size: 200,
     publish_timeout: 500ms, lease: 2s, poll_interval: 100ms, ordering: key}
`, dsn, natsURL))
	return cfg
}

// Rule: two `herald run` on one MariaDB binlog lane: one reads, the other
// stands by; after SIGKILL of the reader the standby takes over within the
// lease; after a SIGKILL and restart of the database it reads on; every
// event committed before, between and after reaches the broker and is
// marked delivered, none lost.
func TestBinlogRelayKilledStandbyTakesOver(t *testing.T) {
	dir := t.TempDir()
	db, dsn := testenv.NewBinlogMariaDB(t)
	srv, err := natsembed.Start(natsembed.Config{Dir: filepath.Join(dir, "nats"), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	cfg := binlogConfig(t, dir, dsn, srv.ClientURL())
	code, out := runChildSync(t, dir, "migrate", "--config", cfg)
	if code != 0 || !strings.Contains(out, "ready for log lanes") {
		t.Fatalf("migrate: exit %d\n%s", code, out)
	}
	s, err := mysql.Open(context.Background(), dsn, mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	logStats := func() store.LaneStats {
		st, err := s.Stats(context.Background(), store.Scope{Table: "log_outbox"})
		if err != nil {
			t.Logf("stats: %v", err) // while the database restarts
		}
		return st
	}

	first := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 30*time.Second, "the first relay reading", func() bool { return strings.Contains(first.stderr.String(), "log reader active") })
	second := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 30*time.Second, "the second relay standing by", func() bool { return strings.Contains(second.stderr.String(), "standing by") })

	const part = 2000
	enqueueMany(t, s, "log_outbox", part)
	waitFor(t, 60*time.Second, "some delivered", func() bool { return logStats().Delivered > 0 })
	first.kill()
	killed := time.Now()
	enqueueMany(t, s, "log_outbox", part)
	waitFor(t, 30*time.Second, "the standby reading", func() bool { return strings.Contains(second.stderr.String(), "log reader active") })
	checkTakeover(t, second, killed)
	waitDelivered := func(c *child, want int64) {
		t.Helper()
		for deadline := time.Now().Add(120 * time.Second); logStats().Delivered != want; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				out := c.stderr.String()
				t.Fatalf("%d events not all delivered after 2m: %+v; the relay's log ends:\n%s", want, logStats(), out[max(0, len(out)-3000):])
			}
		}
	}
	waitDelivered(second, 2*part)

	db.Kill()
	db.Start(t)
	waitFor(t, 30*time.Second, "the database back", func() bool { return s.DB().Ping() == nil })
	enqueueMany(t, s, "log_outbox", part)
	waitDelivered(second, 3*part)
	second.terminate(t)
	if st := logStats(); st.Pending+st.InFlight+st.Retrying+st.Dead != 0 {
		t.Fatalf("rows left over: %+v", st)
	}
	seen := map[string]int{}
	for _, m := range readStream(t, srv.ClientURL(), "BINLOG", streamLen(t, srv.ClientURL(), "BINLOG")) {
		seen[m.Header.Get("ce-id")]++
	}
	if len(seen) != 3*part {
		t.Fatalf("the broker has %d distinct events, want %d", len(seen), 3*part)
	}
}

// Rule: `herald run` refuses a log lane on a MariaDB without a binary log
// with exit 2 naming the setting and the lane, and `herald migrate` prints
// what the mode needs (the machine's shared server runs without one).
func TestBinlogRunRefusesWithoutBinaryLog(t *testing.T) {
	testenv.RequireDB(t, "mysql", testenv.MySQLDSN(), "MySQL")
	s, err := mysql.Open(context.Background(), testenv.MySQLDSN(), mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var on string
	s.DB().QueryRow("SELECT @@log_bin").Scan(&on)
	if on == "1" {
		t.Skip("the shared server runs with a binary log")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	table := testenv.Name("binlogref")
	defer s.Drop(context.Background(), table)
	writeFile(t, cfg, fmt.Sprintf(`
store: {driver: mysql, dsn: %q}
brokers:
  out: {type: stdout}
lanes:
  - {name: main, table: %s, source: log, destination: "x.{topic}"}
`, testenv.MySQLDSN(), table))
	code, out := runChildSync(t, dir, "migrate", "--config", cfg)
	if code != 0 || !strings.Contains(out, "log_bin = ON (now OFF") || !strings.Contains(out, "REPLICATION SLAVE") || !strings.Contains(out, "not ready") {
		t.Fatalf("migrate: exit %d, want 0 and the needs of log lanes\n%s", code, out)
	}
	code, out = runChildSync(t, dir, "run", "--config", cfg)
	if code != 2 || !strings.Contains(out, "log_bin is OFF") || !strings.Contains(out, `lane "main"`) {
		t.Fatalf("run: exit %d, want 2 naming log_bin and the lane\n%s", code, out)
	}
}
