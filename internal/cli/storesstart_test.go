package cli

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
)

// downAtStart is how long store b's database stays down after `herald run`
// starts, as in the report this test answers.
const downAtStart = 30 * time.Second

// Rule: each store of `herald run` starts on its own. With store b's
// PostgreSQL down at start (for 30 s), store a (the shared MariaDB)
// delivers its backlog at once; /healthz answers, /readyz is 503 naming
// store b alone and /metrics has herald_store_up 0 for b and 1 for a;
// `herald status` shows a's lanes and marks b's unreachable (exit 1), and
// `herald migrate` migrates a and names b (exit 1). Once b's database is
// up, the same process relays b's events.
func TestRunStoreDownAtStartHoldsUpNoOther(t *testing.T) {
	testenv.RequireDB(t, "mysql", testenv.MySQLDSN(), "MySQL/MariaDB")
	pg := testenv.NewPostgres(t)
	pg.Start(t)
	createDatabase(t, "pgx", pg.DSN("postgres"))
	pg.Kill()

	a, tableA := backlog(t, 1000)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, fmt.Sprintf(`
store: {driver: mysql, dsn: %q}
stores:
  b: {driver: postgres, dsn: %q}
brokers:
  out: {type: stdout}
lanes:
  - {name: la, table: %s, destination: "x.{topic}", poll_interval: 50ms}
  - {name: lb, store: b, table: lb_outbox, destination: "x.{topic}", poll_interval: 50ms}
`, testenv.MySQLDSN(), pg.DSN("herald"), tableA))

	start := time.Now()
	run := startChild(t, dir, "run", "--config", cfg)
	addr := adminAddr(t, run)
	first, all := timeDelivery(t, a, tableA, 1000, "store a's backlog while store b is down")
	t.Logf("store a, 1,000 events, b down: first delivered %v after start, all %v", first.Sub(start), all.Sub(start))
	checkProbesAwaitingB(t, addr)
	checkCommandsAwaitingB(t, dir, cfg)
	enqueueMany(t, a, tableA, 100)
	waitFor(t, 30*time.Second, "store a delivering more while b is down", func() bool { return delivered(t, a, tableA) == 1100 })
	holdDown(t, addr, start.Add(downAtStart))

	pg.Start(t)
	up := time.Now()
	b := openWhenUp(t, pg.DSN("herald"))
	if err := b.Migrate(context.Background(), "lb_outbox"); err != nil {
		t.Fatal(err)
	}
	enqueueMany(t, b, "lb_outbox", 1000)
	_, allB := timeDelivery(t, b, "lb_outbox", 1000, "store b's events once its database is up")
	t.Logf("store b, 1,000 events enqueued once up: all delivered %v after its database came up", allB.Sub(up))
	waitFor(t, 30*time.Second, "/readyz 200 with both stores up", func() bool { code, _ := readyz(addr); return code == http.StatusOK })
	if !strings.Contains(run.stderr.String(), "database unreachable at start; waiting for it") {
		t.Errorf("the wait for store b was not logged:\n%s", run.stderr.String())
	}
	run.terminate(t)
}

// backlog migrates a fresh table on the shared MariaDB, dropped when the
// test ends, and commits n events to it.
func backlog(t *testing.T, n int) (store.Store, string) {
	t.Helper()
	ctx := context.Background()
	s, err := mysql.Open(ctx, testenv.MySQLDSN(), mysql.Options{})
	if err != nil {
		testenv.Unreachable(t, "MySQL/MariaDB", err)
	}
	table := testenv.Name("stores_start")
	t.Cleanup(func() {
		_ = s.Drop(context.Background(), table)
		s.Close()
	})
	if err := s.Migrate(ctx, table); err != nil {
		t.Fatal(err)
	}
	enqueueMany(t, s, table, n)
	return s, table
}

// timeDelivery waits until table has n delivered events and returns when
// the first and the last were seen delivered (polled every 20 ms).
func timeDelivery(t *testing.T, s store.Store, table string, n int64, what string) (first, all time.Time) {
	t.Helper()
	waitFor(t, 60*time.Second, what, func() bool {
		d := delivered(t, s, table)
		if d > 0 && first.IsZero() {
			first = time.Now()
		}
		return d == n
	})
	return first, time.Now()
}

func delivered(t *testing.T, s store.Store, table string) int64 {
	t.Helper()
	st, err := s.Stats(context.Background(), store.Scope{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	return st.Delivered
}

// checkProbesAwaitingB checks the admin endpoint while store b is awaited.
func checkProbesAwaitingB(t *testing.T, addr string) {
	t.Helper()
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz while store b is awaited: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	code, body := readyz(addr)
	if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "store b: not reachable yet") ||
		!strings.Contains(body, "connection refused") || strings.Contains(body, "store default") {
		t.Errorf("/readyz while store b is awaited = %d %q; want 503 naming store b alone and why", code, body)
	}
	m := scrape(t, addr)
	for _, want := range []string{`herald_store_up{store="b"} 0`, `herald_store_up{store="default"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics while store b is awaited lacks %s", want)
		}
	}
}

// checkCommandsAwaitingB runs `herald status` and `herald migrate` while
// store b's database is down: each reports store a and names b.
func checkCommandsAwaitingB(t *testing.T, dir, cfg string) {
	t.Helper()
	code, out := runChildSync(t, dir, "status", "--config", cfg)
	la, lb := lineOf(out, " la "), lineOf(out, " lb ")
	if code != ExitFailure || !strings.Contains(la, " 1000 ") || !strings.HasSuffix(la, "ok") ||
		!strings.HasSuffix(lb, "store unreachable") || !strings.Contains(out, "herald: store b: ") {
		t.Errorf("herald status while store b is down: exit %d, want %d, a's lane counted and b's marked:\n%s", code, ExitFailure, out)
	}
	code, out = runChildSync(t, dir, "migrate", "--config", cfg)
	if code != ExitFailure || !strings.Contains(out, "store default: migrated") || !strings.Contains(out, "herald: store b: ") {
		t.Errorf("herald migrate while store b is down: exit %d, want %d, a migrated and b named:\n%s", code, ExitFailure, out)
	}
}

// lineOf returns the first line of out that contains s, trimmed.
func lineOf(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// holdDown keeps store b's database down until the given time, checking
// all along that /readyz names b as awaited.
func holdDown(t *testing.T, addr string, until time.Time) {
	t.Helper()
	for time.Now().Before(until) {
		if code, body := readyz(addr); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "store b: not reachable yet") {
			t.Fatalf("/readyz while store b is down = %d %q", code, body)
		}
		time.Sleep(min(time.Until(until), 500*time.Millisecond))
	}
}

// openWhenUp opens a PostgreSQL store on dsn, retrying while the server
// starts up.
func openWhenUp(t *testing.T, dsn string) store.Store {
	t.Helper()
	var s store.Store
	waitFor(t, 30*time.Second, "the test's own store to open", func() bool {
		var err error
		s, err = postgres.Open(context.Background(), dsn, postgres.Options{})
		return err == nil
	})
	t.Cleanup(func() { s.Close() })
	return s
}
