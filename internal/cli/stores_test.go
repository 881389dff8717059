package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/admin"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store/mysql"
)

// Rule: one `herald run` relays from several stores at once (two MariaDB
// databases and a PostgreSQL one, the same table name in each), every
// event delivered exactly once by its own store's lane; `herald status
// --json` names each lane's store, and `herald dead list` works on the
// store --store (or --lane) names.
func TestRunSeveralStores(t *testing.T) {
	natsURL := testenv.RequireNATS(t)
	dsns := map[string]string{
		"default": newMariaDBDatabase(t), "b": newMariaDBDatabase(t), "pg": newPostgresDatabase(t),
	}
	prefix := strings.ToLower(testenv.Name("stores"))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, fmt.Sprintf(`
store: {driver: mysql, dsn: %q}
stores:
  b: {driver: mysql, dsn: %q}
  pg: {driver: postgres, dsn: %q}
brokers:
  nats: {type: nats, url: %q, stream: %s, subjects: ["%s.>"], create_stream: true}
lanes:
  - {name: la, destination: "%s.default.{topic}", poll_interval: 50ms}
  - {name: lb, store: b, destination: "%s.b.{topic}", poll_interval: 50ms}
  - {name: lpg, store: pg, destination: "%s.pg.{topic}", poll_interval: 50ms}
`, dsns["default"], dsns["b"], dsns["pg"], natsURL, strings.ToUpper(prefix), prefix, prefix, prefix, prefix))
	if code, out, errOut := cliRun(t, "migrate", "--config", cfg); code != 0 || strings.Count(out, "migrated") != 3 {
		t.Fatalf("migrate: exit %d: %s%s; want every store migrated", code, out, errOut)
	}
	lanes := map[string]string{"la": "default", "lb": "b", "lpg": "pg"}
	const perLane = 5
	for lane, st := range lanes {
		for i := range perLane {
			id := fmt.Sprintf("%s-%d", st, i)
			if code, _, errOut := cliRun(t, "enqueue", "--config", cfg, "--lane", lane, "--id", id, "--type", "T"); code != 0 {
				t.Fatalf("enqueue %s on lane %s: exit %d: %s", id, lane, code, errOut)
			}
		}
	}
	wire := tapWire(t, natsURL, prefix+".>")
	run := startChild(t, dir, "run", "--config", cfg)
	var report admin.StatusReport
	waitFor(t, 60*time.Second, "every lane's events delivered", func() bool {
		code, out, _ := cliRun(t, "status", "--config", cfg, "--json")
		report = admin.StatusReport{}
		if code != 0 || json.Unmarshal([]byte(out), &report) != nil || len(report.Lanes) != 3 {
			return false
		}
		for _, l := range report.Lanes {
			if l.Delivered != perLane {
				return false
			}
		}
		return true
	})
	for _, l := range report.Lanes {
		if l.Store != lanes[l.Name] || l.Pending+l.Retrying+l.InFlight+l.Dead != 0 {
			t.Errorf("status --json lane %s = %+v; want store %s and only delivered rows", l.Name, l, lanes[l.Name])
		}
	}
	checkStreamFromStores(t, natsURL, strings.ToUpper(prefix), prefix, 3*perLane)
	checkReadyWithStores(t, adminAddr(t, run))
	run.terminate(t)
	checkWire(t, wire, 3*perLane, 0) // the stream dedupes; the wire shows a second publish
	checkDeadByStore(t, cfg, dsns["b"])
}

// checkStreamFromStores reads the whole stream: n messages, each event id
// once, on its own store's subject.
func checkStreamFromStores(t *testing.T, natsURL, stream, prefix string, n int) {
	t.Helper()
	seen := map[string]int{}
	for _, m := range readStream(t, natsURL, stream, n) {
		id := m.Header.Get("ce-id")
		st, _, _ := strings.Cut(id, "-")
		if m.Subject != prefix+"."+st+".default" {
			t.Errorf("event %s came out on %s; want %s.%s.default (its store's lane)", id, m.Subject, prefix, st)
		}
		seen[id]++
	}
	if len(seen) != n {
		t.Errorf("stream has %d distinct events, want %d: %v", len(seen), n, seen)
	}
	nc, err := natsgo.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().State.Msgs; got != uint64(n) {
		t.Errorf("stream %s holds %d messages, want %d (each event once)", stream, got, n)
	}
	_ = js.DeleteStream(ctx, stream)
}

// checkReadyWithStores checks /readyz and the per-store herald_store_up.
func checkReadyWithStores(t *testing.T, addr string) {
	t.Helper()
	if code, body := readyz(addr); code != 200 {
		t.Errorf("/readyz = %d %q, want 200", code, body)
	}
	metrics := scrape(t, addr)
	for _, st := range []string{"default", "b", "pg"} {
		if want := fmt.Sprintf(`herald_store_up{store=%q} 1`, st); !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// checkDeadByStore makes one event of store b dead and lists it with
// --store b and with --lane lb, not with --store pg.
func checkDeadByStore(t *testing.T, cfg, dsnB string) {
	t.Helper()
	if code, _, errOut := cliRun(t, "enqueue", "--config", cfg, "--lane", "lb", "--id", "b-dead", "--type", "T"); code != 0 {
		t.Fatalf("enqueue: exit %d: %s", code, errOut)
	}
	s, err := mysql.Open(context.Background(), dsnB, mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	killAll(t, s, "herald_outbox")
	for _, args := range [][]string{{"--store", "b"}, {"--lane", "lb"}} {
		code, out, errOut := cliRun(t, append([]string{"dead", "list", "--config", cfg, "--json"}, args...)...)
		if code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"event_id":"b-dead"`) {
			t.Errorf("dead list %v: exit %d: %s%s; want the one dead event b-dead", args, code, out, errOut)
		}
	}
	if code, out, errOut := cliRun(t, "dead", "list", "--config", cfg, "--json", "--store", "pg"); code != 0 || out != "" {
		t.Errorf("dead list --store pg: exit %d: %q %s; want none", code, out, errOut)
	}
	if code, _, errOut := cliRun(t, "dead", "list", "--config", cfg, "--store", "pg", "--lane", "lb"); code != ExitUsage ||
		!strings.Contains(errOut, "lane lb is in store b") {
		t.Errorf("dead list --store pg --lane lb: exit %d: %s; want 2 naming lb's store", code, errOut)
	}
	if code, _, errOut := cliRun(t, "status", "--config", cfg, "--store", "nope"); code != ExitUsage ||
		!strings.Contains(errOut, `unknown store "nope" (configured: default, b, pg)`) {
		t.Errorf("status --store nope: exit %d: %s; want 2 naming the stores", code, errOut)
	}
}

// newMariaDBDatabase creates a database of its own on the shared MariaDB,
// dropped at the end of the test, and returns its DSN.
func newMariaDBDatabase(t *testing.T) string {
	t.Helper()
	testenv.RequireDB(t, "mysql", testenv.MySQLDSN(), "MariaDB")
	c, err := gomysql.ParseDSN(testenv.MySQLDSN())
	if err != nil {
		t.Fatal(err)
	}
	c.DBName = testenv.Name("herald_stores")
	createDropped(t, "mysql", testenv.MySQLDSN(), "`"+c.DBName+"`")
	return c.FormatDSN()
}

// newPostgresDatabase does the same on the shared PostgreSQL.
func newPostgresDatabase(t *testing.T) string {
	t.Helper()
	testenv.RequireDB(t, "pgx", testenv.PostgresDSN(), "PostgreSQL")
	u, err := url.Parse(testenv.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.Name("herald_stores")
	createDropped(t, "pgx", testenv.PostgresDSN(), `"`+name+`"`)
	u.Path = "/" + name
	return u.String()
}

// createDropped creates database name (quoted) through dsn and drops it
// when the test ends.
func createDropped(t *testing.T, driver, dsn, name string) {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		db.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer db.Close()
		drop := "DROP DATABASE IF EXISTS " + name
		if driver == "pgx" {
			drop += " WITH (FORCE)"
		}
		if _, err := db.Exec(drop); err != nil {
			t.Errorf("%s: %v", drop, err)
		}
	})
}
