package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/broker/natsembed"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/postgres"
)

// logicalPostgresAndNATS starts a PostgreSQL with wal_level=logical and
// an embedded NATS server for the test, in a temporary directory.
func logicalPostgresAndNATS(t *testing.T) (dir, dsn, natsURL string) {
	t.Helper()
	dir = t.TempDir()
	_, dsn = testenv.NewLogicalPostgres(t)
	srv, err := natsembed.Start(natsembed.Config{Dir: filepath.Join(dir, "nats"), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return dir, dsn, srv.ClientURL()
}

// logConfig writes a config with one log lane on dsn to NATS at natsURL.
func logConfig(t *testing.T, dir, dsn, natsURL string) string {
	t.Helper()
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, fmt.Sprintf(`
store: {driver: postgres, dsn: %q}
brokers:
  events: {type: nats, url: %q, stream: LOG, subjects: ["log.>"], create_stream: true}
lanes:
  - {name: main, table: log_outbox, source: log, destination: "log.{topic}", batch_size: 200,
     publish_timeout: 500ms, lease: 2s, poll_interval: 100ms, ordering: key}
`, dsn, natsURL))
	return cfg
}

// Rule: two `herald run` on one log lane: one reads, the other stands by;
// after SIGKILL of the reader the standby takes over within the lease, and
// every event committed before, during and after reaches the broker and is
// marked delivered, none lost.
func TestLogicalRelayKilledStandbyTakesOver(t *testing.T) {
	dir, dsn, natsURL := logicalPostgresAndNATS(t)
	cfg := logConfig(t, dir, dsn, natsURL)
	code, out := runChildSync(t, dir, "migrate", "--config", cfg)
	if code != 0 || !strings.Contains(out, "ready for log lanes") {
		t.Fatalf("migrate: exit %d\n%s", code, out)
	}
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	logStats := func() store.LaneStats {
		st, err := s.Stats(context.Background(), store.Scope{Table: "log_outbox"})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	first := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 30*time.Second, "the first relay reading", func() bool { return strings.Contains(first.stderr.String(), "log reader active") })
	second := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 30*time.Second, "the second relay standing by", func() bool { return strings.Contains(second.stderr.String(), "standing by") })

	const total = 6000
	enqueueMany(t, s, "log_outbox", total/2)
	waitFor(t, 60*time.Second, "some delivered", func() bool { return logStats().Delivered > 0 })
	first.kill()
	killed := time.Now()
	enqueueMany(t, s, "log_outbox", total/2)
	waitFor(t, 30*time.Second, "the standby reading", func() bool { return strings.Contains(second.stderr.String(), "log reader active") })
	checkTakeover(t, second, killed)
	waitFor(t, 120*time.Second, "everything delivered", func() bool { return logStats().Delivered == total })
	second.terminate(t)
	if st := logStats(); st.Pending+st.InFlight+st.Retrying+st.Dead != 0 {
		t.Fatalf("rows left over: %+v", st)
	}
	seen := map[string]int{}
	for _, m := range readStream(t, natsURL, "LOG", streamLen(t, natsURL, "LOG")) {
		seen[m.Header.Get("ce-id")]++
	}
	if len(seen) != total {
		t.Fatalf("the broker has %d distinct events, want %d", len(seen), total)
	}
}

// takeoverBound is how soon after the active reader's death a standby of
// a lane with lease: 2s must be reading: the lease (renewed before the
// death, so expired within it), the standby's next try (every lease/4),
// and a second to open the stream on a loaded machine under -race.
const takeoverBound = 2*time.Second + 2*time.Second/4 + time.Second

// checkTakeover fails unless standby logged its takeover ("log reader
// active") within takeoverBound of killed, measured to the log line's own
// time: the events the test enqueues meanwhile are not counted.
func checkTakeover(t *testing.T, standby *child, killed time.Time) {
	t.Helper()
	took := standby.loggedAt(t, "log reader active").Sub(killed)
	t.Logf("the standby took over %s after the SIGKILL", took.Round(time.Millisecond))
	if took > takeoverBound {
		t.Fatalf("the standby took over %s after the SIGKILL; the lease is 2s, tried every 0.5s (bound %s)", took, takeoverBound)
	}
}

// streamLen is how many messages a JetStream stream holds.
func streamLen(t *testing.T, url, name string) int {
	t.Helper()
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return int(info.State.Msgs)
}

// Rule: `herald run` refuses a log lane on a database without
// wal_level=logical with exit 2 naming the setting, and `herald migrate`
// prints what the mode needs (the machine's shared server runs
// wal_level=replica).
func TestLogicalRunRefusesWalLevelReplica(t *testing.T) {
	s, err := postgres.Open(context.Background(), testenv.PostgresDSN(), postgres.Options{})
	if err != nil {
		testenv.Unreachable(t, "PostgreSQL", err)
	}
	defer s.Close()
	var level string
	s.DB().QueryRow("SHOW wal_level").Scan(&level)
	if level == "logical" {
		t.Skip("the shared server runs wal_level=logical")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	table := testenv.Name("logref")
	defer s.Drop(context.Background(), table)
	writeFile(t, cfg, fmt.Sprintf(`
store: {driver: postgres, dsn: %q}
brokers:
  out: {type: stdout}
lanes:
  - {name: main, table: %s, source: log, destination: "x.{topic}"}
`, testenv.PostgresDSN(), table))
	code, out := runChildSync(t, dir, "migrate", "--config", cfg)
	if code != 0 || !strings.Contains(out, "wal_level = logical (now "+level) || !strings.Contains(out, "not ready") {
		t.Fatalf("migrate: exit %d, want 0 and the needs of log lanes\n%s", code, out)
	}
	code, out = runChildSync(t, dir, "run", "--config", cfg)
	if code != 2 || !strings.Contains(out, "wal_level = logical") || !strings.Contains(out, `lane "main"`) {
		t.Fatalf("run: exit %d, want 2 naming wal_level and the lane\n%s", code, out)
	}
}

// Rule: `herald bench throughput` drains a PostgreSQL log lane whose events
// were written as rows (and deleted once delivered) or as logical messages
// (no row at all), every event reaching the broker once; --write messages
// on a polling lane is a usage error naming it.
func TestLogicalBenchThroughput(t *testing.T) {
	dir, dsn, natsURL := logicalPostgresAndNATS(t)
	cfg := logConfig(t, dir, dsn, natsURL)
	published := 0
	for _, args := range [][]string{{"--on-delivered", "delete"}, {"--write", "messages"}} {
		code, out, errOut := cliRun(t, append([]string{"bench", "throughput", "--config", cfg, "--source", "log",
			"--events", "300", "--batch", "100", "--runs", "1", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("bench throughput %v: exit %d: %s", args, code, errOut)
		}
		var res struct{ Broker, Limit float64 }
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Broker <= 0 || res.Limit <= 0 {
			t.Fatalf("bench throughput %v --json = %s (%v)", args, out, err)
		}
		published += 300 + 1 // and the warm-up event of each run
		if n := streamLen(t, natsURL, "LOG"); n != published {
			t.Fatalf("after bench throughput %v the stream holds %d messages, want %d (each event once)", args, n, published)
		}
	}
	code, _, errOut := cliRun(t, "bench", "throughput", "--config", cfg, "--write", "messages")
	if code != ExitUsage || !strings.Contains(errOut, "--write") {
		t.Fatalf("--write messages on a polling lane must be a usage error naming --write, got %d: %s", code, errOut)
	}
	checkLogicalBenchLatencyIdle(t, cfg)
}

// checkLogicalBenchLatencyIdle: `herald bench latency` and `idle` measure a
// log lane with --source log, each event produced reaching the broker.
func checkLogicalBenchLatencyIdle(t *testing.T, cfg string) {
	t.Helper()
	code, out, errOut := cliRun(t, "bench", "latency", "--config", cfg, "--source", "log", "--rate", "200",
		"--duration", "500ms", "--json")
	var lat struct {
		Events int
		P50    time.Duration
	}
	if code != 0 || json.Unmarshal([]byte(out), &lat) != nil || lat.Events != 100 || lat.P50 <= 0 {
		t.Fatalf("bench latency --source log: exit %d, %s%s; want 100 events timed", code, out, errOut)
	}
	code, out, errOut = cliRun(t, "bench", "idle", "--config", cfg, "--source", "log", "--duration", "300ms", "--json")
	if code != 0 || !strings.Contains(out, "idle_cpu_core_fraction") {
		t.Fatalf("bench idle --source log: exit %d, %s%s", code, out, errOut)
	}
	code, _, errOut = cliRun(t, "bench", "latency", "--config", cfg, "--on-delivered", "delete")
	if code != ExitUsage || !strings.Contains(errOut, "--on-delivered") {
		t.Fatalf("bench latency --on-delivered delete on a polling lane must be a usage error, got %d: %s", code, errOut)
	}
}
