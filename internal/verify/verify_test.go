package verify_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kfake"

	_ "github.com/heraldhq/herald/drivers" // the sql drivers RequireDB pings with
	"github.com/heraldhq/herald/internal/testenv"
)

// These tests run `herald verify` as users do: a built binary, whose
// relays are `herald run` children of that binary. They run in parallel
// (two at a time on two cores): each verify is paced, not CPU-bound. It is built without
// the race detector (three relays and a consumer under it would need
// minutes); the package's other tests run with it.

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// TestMain removes the built binary after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" && buildErr == nil {
		os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

func herald(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "herald-verify-test-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "herald")
		out, err := exec.Command("go", "build", "-o", binary, "github.com/heraldhq/herald/cmd/herald").CombinedOutput()
		if err != nil {
			buildErr = err
			binary = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("go build herald: %v\n%s", buildErr, binary)
	}
	return binary
}

// configFile writes a config of one ordered lane on NATS with short
// timeouts, so that a freeze past the lease fits a short test.
func configFile(t *testing.T, dir, storeYAML, natsURL string) string {
	t.Helper()
	stream := testenv.Name("VERIFY_TEST")
	return brokerConfigFile(t, dir, storeYAML, "{type: nats, url: \""+natsURL+"\", stream: "+stream+
		", subjects: [\""+strings.ToLower(stream)+".>\"]}", strings.ToLower(stream)+".{topic}")
}

// brokerConfigFile writes a config of one ordered lane on the broker
// entry brokerYAML.
func brokerConfigFile(t *testing.T, dir, storeYAML, brokerYAML, destination string) string {
	t.Helper()
	yaml := "store: " + storeYAML + "\n" +
		"brokers:\n  events: " + brokerYAML + "\n" +
		"lanes:\n  - {name: room, table: room_outbox, broker: events, destination: \"" + destination + "\",\n" +
		"     ordering: key, concurrency: 2, publish_timeout: 1s, lease: 2s, poll_interval: 100ms, retry: {initial: 100ms, max: 1s}}\n"
	path := filepath.Join(dir, "herald.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// result is the part of the --json report the tests read.
type result struct {
	Held        bool     `json:"held"`
	Interrupted bool     `json:"interrupted"`
	Table       string   `json:"table"`
	Committed   int      `json:"committed"`
	RolledBack  int      `json:"rolled_back"`
	Lost        int      `json:"lost"`
	Phantom     int      `json:"phantom"`
	Dead        int      `json:"dead"`
	InFlight    int      `json:"in_flight"`
	Notes       []string `json:"notes"`
	Injected    []struct {
		Fault  string `json:"fault"`
		Detail string `json:"detail"`
	} `json:"injected"`
	Verdicts        []verdictResult `json:"verdicts"`
	ProjectionOnce  int             `json:"projection_applied_once"`
	ProjectionTwice int             `json:"projection_applied_twice"`
}

// verdictResult is one verdict of the --json report.
type verdictResult struct {
	Check   string `json:"check"`
	Held    bool   `json:"held"`
	Skipped bool   `json:"skipped"`
	Detail  string `json:"detail"`
}

// verify runs herald verify in dir and returns its exit code, report and
// stderr.
func verify(t *testing.T, dir string, env []string, args ...string) (int, result, string) {
	t.Helper()
	cmd := exec.Command(herald(t), append([]string{"verify", "--json"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(3*time.Minute, func() { _ = cmd.Process.Kill() })
	_ = cmd.Wait()
	if !timer.Stop() {
		t.Fatalf("herald verify did not finish within 3 minutes:\n%s", stderr.String())
	}
	var r result
	if stdout.Len() > 0 {
		if err := json.Unmarshal([]byte(stdout.String()), &r); err != nil {
			t.Fatalf("report is not JSON: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
	}
	return cmd.ProcessState.ExitCode(), r, stderr.String()
}

// requireHeld checks that every guarantee held, under every fault asked.
func requireHeld(t *testing.T, code int, r result, stderr string, faults []string) {
	t.Helper()
	if code != 0 || !r.Held {
		t.Fatalf("exit %d, held %v; want 0 and every guarantee held: %+v\n%s", code, r.Held, r, stderr)
	}
	if r.Committed == 0 || r.RolledBack == 0 || r.Lost != 0 || r.Phantom != 0 || r.Dead != 0 || r.InFlight != 0 {
		t.Fatalf("figures: %+v", r)
	}
	seen := map[string]bool{}
	for _, f := range r.Injected {
		if !strings.Contains(f.Detail, "no ") {
			seen[f.Fault] = true
		}
	}
	for _, f := range faults {
		if !seen[f] {
			t.Fatalf("fault %s not injected: %+v", f, r.Injected)
		}
	}
	if len(r.Verdicts) < 5 {
		t.Fatalf("verdicts: %+v", r.Verdicts)
	}
}

// stores are the databases verify is run on, with the faults each takes:
// a file database has no connection to cut.
var stores = []struct {
	name, driver, dsn, server, yamlDriver string
	faults                                []string
}{
	{"sqlite", "", "", "", "sqlite", []string{"cut-broker", "kill", "stop"}},
	{"mariadb", "mysql", testenv.MySQLDSN(), "MariaDB", "mysql", []string{"cut-broker", "cut-db", "kill", "stop"}},
	{"postgres", "pgx", testenv.PostgresDSN(), "PostgreSQL", "postgres", []string{"blackhole-broker", "cut-broker", "cut-db", "kill", "stop"}},
}

// brokerUnderTest makes a lane's broker entry and destination for one
// run, checking the server is there; Kafka is a kfake cluster of three
// brokers in this process, one per run.
type brokerUnderTest struct {
	name string
	open func(t *testing.T) (entry, destination string)
}

var brokers = []brokerUnderTest{
	{"nats", func(t *testing.T) (string, string) {
		url := testenv.RequireNATS(t)
		stream := testenv.Name("VERIFY_TEST")
		return "{type: nats, url: \"" + url + "\", stream: " + stream + ", subjects: [\"" + strings.ToLower(stream) + ".>\"]}",
			strings.ToLower(stream) + ".{topic}"
	}},
	{"redis", func(t *testing.T) (string, string) {
		testenv.RequireTCP(t, "redis", "127.0.0.1:6379")
		return "{type: redis, url: \"redis://127.0.0.1:6379/0\"}", "verify.{topic}"
	}},
	{"rabbitmq", func(t *testing.T) (string, string) {
		testenv.RequireTCP(t, "rabbitmq", "127.0.0.1:5672")
		return "{type: rabbitmq, url: \"amqp://guest:guest@127.0.0.1:5672/\"}", "verify.{topic}"
	}},
	{"kafka", func(t *testing.T) (string, string) {
		c, err := kfake.NewCluster(kfake.NumBrokers(3))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return "{type: kafka, brokers: [\"" + strings.Join(c.ListenAddrs(), "\", \"") + "\"]}", "verify.{topic}"
	}},
}

// storeYAML is the store entry of s, checking the server is there.
func storeYAML(t *testing.T, driver, dsn, server, yamlDriver string) string {
	t.Helper()
	if driver == "" {
		return "{driver: sqlite, dsn: verify.db}"
	}
	testenv.RequireDB(t, driver, dsn, server)
	return "{driver: " + yamlDriver + ", dsn: \"" + dsn + "\"}"
}

// TestVerifyHoldsUnderFaults: on each database with each broker, relay
// kills, a freeze past the lease and proxy cuts of the broker (on Kafka,
// of every broker of a three-broker cluster) and of the database (where
// it is a server) leave every guarantee held.
func TestVerifyHoldsUnderFaults(t *testing.T) {
	t.Parallel()
	for _, b := range brokers {
		for _, s := range stores {
			t.Run(b.name+"/"+s.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				st := storeYAML(t, s.driver, s.dsn, s.server, s.yamlDriver)
				entry, dest := b.open(t)
				cfg := brokerConfigFile(t, dir, st, entry, dest)
				code, r, stderr := verify(t, dir, nil, "--config", cfg, "--events", "250", "--duration", "6s",
					"--faults", strings.Join(s.faults, ","))
				requireHeld(t, code, r, stderr, s.faults)
				if b.name == "nats" {
					requireRemoved(t, testenv.NATSURL(), r.Table)
				}
			})
		}
	}
}

// TestVerifyProjection: a config whose projection reads the lane (from
// its outbox table, or from its broker: NATS, Kafka) gets a scratch copy of it run by
// the relays, under kills, a freeze and cuts, and its ledger is checked:
// every committed event applied once, no rolled-back one. A second
// application made behind the projector's back (the test-only hook
// "twice") fails the check with exit 1.
func TestVerifyProjection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, source, hook string
		store, broker      int // indexes in stores and brokers
		faults             []string
	}{
		{"outbox-postgres-nats", "{outbox: room_outbox}", "", 2, 0, []string{"cut-db", "kill", "stop"}},
		{"nats-sqlite", "{broker: events, destination: \"room.>\"}", "", 0, 0, []string{"cut-broker", "kill", "stop"}},
		{"kafka-mariadb", "{broker: events, destination: room}", "", 1, 3, []string{"cut-broker", "kill"}},
		{"twice", "{outbox: room_outbox}", "twice", 0, 0, []string{"kill"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := stores[tc.store]
			entry, dest := brokers[tc.broker].open(t)
			cfg := brokerConfigFile(t, dir, storeYAML(t, s.driver, s.dsn, s.server, s.yamlDriver), entry, dest)
			appendFile(t, cfg, "projections:\n  - {name: rooms, source: "+tc.source+
				", statements: [\"INSERT INTO rooms (id) VALUES (:event.id)\"]}\n")
			var env []string
			if tc.hook != "" {
				env = []string{"HERALD_VERIFY_TEST_BREAK=" + tc.hook}
			}
			code, r, stderr := verify(t, dir, env, "--config", cfg, "--events", "200", "--duration", "5s",
				"--faults", strings.Join(tc.faults, ","))
			v := verdictOf(t, r, "projection applied exactly once")
			if tc.hook != "" {
				if code != 1 || r.Held || v.Held || r.ProjectionTwice != 1 {
					t.Fatalf("exit %d, held %v, projection %+v, twice %d; want 1 and the projection check failed once:\n%s",
						code, r.Held, v, r.ProjectionTwice, stderr)
				}
				return
			}
			requireHeld(t, code, r, stderr, tc.faults)
			if v.Skipped || r.ProjectionOnce != r.Committed {
				t.Fatalf("projection %+v, applied once %d of %d committed", v, r.ProjectionOnce, r.Committed)
			}
		})
	}
}

// appendFile appends text to the file at path.
func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// verdictOf returns the report's verdict named check.
func verdictOf(t *testing.T, r result, check string) verdictResult {
	t.Helper()
	for _, v := range r.Verdicts {
		if v.Check == check {
			return v
		}
	}
	t.Fatalf("no verdict %q in %+v", check, r.Verdicts)
	return verdictResult{}
}

// TestVerifyRestartBroker: --restart-broker-cmd restarts a redis-server
// of the test's own mid-run and --read-late reads back what it kept. With
// an fsynced append-only file every guarantee holds; without persistence
// the restart forgets events it had acknowledged, and verify reports them
// lost (exit 1): the loss a caught-up consumer would not see.
func TestVerifyRestartBroker(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, persistence string
		held              bool
	}{
		{"fsynced", "--appendonly yes --appendfsync always", true},
		{"forgetful", "--appendonly no", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath("redis-server"); err != nil {
				testenv.Unavailable(t, "redis-server is not installed", err)
			}
			port := strconv.Itoa(testenv.FreePort(t))
			dir := t.TempDir()
			start := "redis-server --port " + port + " --bind 127.0.0.1 --dir " + dir + " --save '' " + tc.persistence + " --daemonize yes"
			stop := "redis-cli -p " + port + " shutdown nosave"
			if out, err := exec.Command("sh", "-c", start).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", start, err, out)
			}
			t.Cleanup(func() { _ = exec.Command("sh", "-c", stop).Run() })
			testenv.WaitFor(t, 10*time.Second, 20*time.Millisecond, "redis-server on "+port, func() bool {
				return exec.Command("redis-cli", "-p", port, "ping").Run() == nil
			})
			cfg := brokerConfigFile(t, dir, "{driver: sqlite, dsn: verify.db}",
				"{type: redis, url: \"redis://127.0.0.1:"+port+"/0\"}", "verify.{topic}")
			restart := stop + "; " + start + "; sleep 0.3"
			code, r, stderr := verify(t, dir, nil, "--config", cfg, "--events", "200", "--duration", "4s", "--faults", "kill",
				"--read-late", "--drain", "10s", "--restart-broker-cmd", restart)
			if tc.held {
				requireHeld(t, code, r, stderr, []string{"kill", "restart-broker"})
				return
			}
			if code != 1 || r.Held || r.Lost == 0 {
				t.Fatalf("exit %d, held %v, lost %d; want 1 and the events the restart forgot:\n%s", code, r.Held, r.Lost, stderr)
			}
		})
	}
}

// TestVerifyEmbeddedDefaults: with no config file verify runs on the
// embedded defaults (a SQLite file and the embedded NATS server, which
// verify starts once for all its relays).
func TestVerifyEmbeddedDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, r, stderr := verify(t, dir, nil, "--events", "100", "--duration", "3s", "--faults", "kill,cut-broker")
	requireHeld(t, code, r, stderr, []string{"kill", "cut-broker"})
}

// TestVerifyReportsABrokenGuarantee: a consumer made to forget an event,
// or to report a rolled-back one, or a relay that marks an event delivered
// without publishing it (the test-only HERALD_VERIFY_TEST_BREAK), is
// reported as a failed guarantee with exit code 1.
func TestVerifyReportsABrokenGuarantee(t *testing.T) {
	t.Parallel()
	natsURL := testenv.RequireNATS(t)
	for _, tc := range []struct{ hook, check string }{
		{"drop", "nothing committed lost"},
		{"phantom", "nothing rolled back or unwritten sent"},
		{"relay-drop", "nothing committed lost"},
	} {
		t.Run(tc.hook, func(t *testing.T) {
			dir := t.TempDir()
			cfg := configFile(t, dir, "{driver: sqlite, dsn: verify.db}", natsURL)
			code, r, stderr := verify(t, dir, []string{"HERALD_VERIFY_TEST_BREAK=" + tc.hook},
				"--config", cfg, "--events", "200", "--duration", "3s", "--faults", "kill", "--drain", "5s")
			if code != 1 || r.Held {
				t.Fatalf("exit %d, held %v; want 1 and a failed guarantee:\n%s", code, r.Held, stderr)
			}
			if (tc.hook != "phantom" && r.Lost != 1) || (tc.hook == "phantom" && r.Phantom != 1) {
				t.Fatalf("lost %d, phantom %d; want the one the hook made", r.Lost, r.Phantom)
			}
			for _, v := range r.Verdicts {
				if (v.Check == tc.check) == v.Held {
					t.Fatalf("verdict %q held=%v; want only %q failed: %+v", v.Check, v.Held, tc.check, r.Verdicts)
				}
			}
		})
	}
}

// TestVerifyRefusesWhatItCannotReadBack: a webhook lane is refused with
// exit 2 and the reason, before anything is created.
func TestVerifyRefusesWhatItCannotReadBack(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	yaml := "store: {driver: sqlite, dsn: verify.db}\nbrokers:\n  hook: {type: webhook, secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}\n" +
		"lanes:\n  - {name: hooks, table: hook_outbox, broker: hook, destination: \"http://127.0.0.1:9/{topic}\"}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := verify(t, dir, nil, "--config", cfg)
	if code != 2 || !strings.Contains(stderr, "brokers.hook: verify cannot read back a broker of type webhook") {
		t.Fatalf("exit %d; want 2 naming the broker and the reason:\n%s", code, stderr)
	}
	for _, bad := range [][]string{{"--faults", "flood"}, {"--events", "0"}, {"--lane", "nope"}, {"--store", "default"},
		{"--faults", "restart-db"}} {
		if code, _, stderr := verify(t, dir, nil, append([]string{"--config", cfg}, bad...)...); code != 2 {
			t.Fatalf("verify %v: exit %d; want 2:\n%s", bad, code, stderr)
		}
	}
}

// TestVerifyInterruptRemovesWhatItCreated: Ctrl-C in the middle prints
// what was found so far and drops the scratch table and stream.
func TestVerifyInterruptRemovesWhatItCreated(t *testing.T) {
	t.Parallel()
	natsURL := testenv.RequireNATS(t)
	dir := t.TempDir()
	cfg := configFile(t, dir, "{driver: sqlite, dsn: verify.db}", natsURL)
	cmd := exec.Command(herald(t), "verify", "--json", "--config", cfg, "--events", "2000", "--duration", "60s")
	cmd.Dir = dir
	var stdout strings.Builder
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "committed") }, 30*time.Second, stderr)
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	var r result
	if err := json.Unmarshal([]byte(stdout.String()), &r); err != nil {
		t.Fatalf("no report after Ctrl-C: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 || !r.Interrupted || r.Committed == 0 {
		t.Fatalf("exit %d, interrupted %v, committed %d; want 1, true and the events so far", code, r.Interrupted, r.Committed)
	}
	requireRemoved(t, natsURL, r.Table)
	db, err := sql.Open("sqlite", filepath.Join(dir, "verify.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = ?`, r.Table).Scan(&n); err != nil || n != 0 {
		t.Fatalf("scratch table %s still there after Ctrl-C (%d, %v)", r.Table, n, err)
	}
}

// requireRemoved checks that the scratch stream of table is gone.
func requireRemoved(t *testing.T, natsURL, table string) {
	t.Helper()
	nc, err := natsgo.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	stream := strings.ToUpper(strings.TrimPrefix(table, "herald_verify_"))
	if _, err := js.Stream(context.Background(), "HERALD_VERIFY_"+stream); err == nil {
		t.Fatalf("stream HERALD_VERIFY_%s still there", stream)
	}
}

// lockedBuffer is an output a test reads while the command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitFor(t *testing.T, ok func() bool, within time.Duration, out *lockedBuffer) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v:\n%s", within, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
