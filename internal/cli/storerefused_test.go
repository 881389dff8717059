package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// Rule: what waiting cannot fix stops `herald run` at start with exit 2
// (so that systemd's RestartPreventExitStatus=2 ends the restart loop) and
// a message naming the store's key and the fix: a table that does not
// exist under --no-migrate, one behind the latest schema, one lacking a
// column, a wrong password, a database that does not exist.
func TestRunRefusesWhatWaitingCannotFix(t *testing.T) {
	testenv.RequireDB(t, "mysql", testenv.MySQLDSN(), "MySQL/MariaDB")
	testenv.RequireDB(t, "pgx", testenv.PostgresDSN(), "PostgreSQL")
	mariadb := testenv.MySQLDSN()
	cases := []struct {
		name  string
		dsn   string // the default store's, on MariaDB; "" for the PostgreSQL case
		table func(t *testing.T) string
		flags []string
		want  []string
	}{
		{name: "table missing without migrations", dsn: mariadb, table: func(*testing.T) string { return testenv.Name("never_made") },
			flags: []string{"--no-migrate"}, want: []string{"store: lane la: table never_made_", "does not exist", "herald migrate"}},
		{name: "table behind the latest schema", dsn: mariadb, table: tableBehind, flags: []string{"--no-migrate"},
			want: []string{"store: lane la: table stores_start_", "is at schema version", "herald migrate"}},
		{name: "column dropped", dsn: mariadb, table: tableWithoutLastError,
			want: []string{"store: lane la: table stores_start_", "lacks column last_error"}},
		{name: "wrong password", dsn: withMySQL(t, mariadb, func(c *gomysql.Config) { c.Passwd = "not-the-password" }),
			table: func(*testing.T) string { return "unused" }, want: []string{"store: ", "Access denied"}},
		{name: "unknown database", table: func(*testing.T) string { return "unused" },
			want: []string{"stores.b: ", "does not exist", "SQLSTATE 3D000"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "herald.yaml")
			yaml := fmt.Sprintf("store: {driver: mysql, dsn: %q}\nbrokers:\n  out: {type: stdout}\nlanes:\n"+
				"  - {name: la, table: %s, destination: \"x.{topic}\"}\n", c.dsn, c.table(t))
			if c.dsn == "" {
				yaml = fmt.Sprintf("stores:\n  b: {driver: postgres, dsn: %q}\nbrokers:\n  out: {type: stdout}\nlanes:\n"+
					"  - {name: lb, store: b, table: lb_outbox, destination: \"x.{topic}\"}\n", unknownDatabase(t))
			}
			writeFile(t, cfg, yaml)
			code, out := runChildSync(t, dir, append([]string{"run", "--config", cfg}, c.flags...)...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d:\n%s", code, ExitUsage, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

// tableBehind is a table on the shared MariaDB whose latest migration is
// not recorded, as if migrated by an older build.
func tableBehind(t *testing.T) string {
	s, table := backlog(t, 0)
	_, latest, err := s.(store.SchemaChecker).SchemaVersion(context.Background(), table)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec("DELETE FROM herald_migrations WHERE table_name = ? AND version = ?", table, latest); err != nil {
		t.Fatal(err)
	}
	return table
}

// tableWithoutLastError is a migrated table on the shared MariaDB whose
// column last_error was dropped by hand: migrating finds nothing to do.
func tableWithoutLastError(t *testing.T) string {
	s, table := backlog(t, 0)
	if _, err := s.DB().Exec("ALTER TABLE " + table + " DROP COLUMN last_error"); err != nil {
		t.Fatal(err)
	}
	return table
}

// withMySQL returns dsn changed by change.
func withMySQL(t *testing.T, dsn string, change func(c *gomysql.Config)) string {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	change(cfg)
	return cfg.FormatDSN()
}

// unknownDatabase is the shared PostgreSQL's URL for a database that does
// not exist.
func unknownDatabase(t *testing.T) string {
	u, err := url.Parse(testenv.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + testenv.Name("herald_nodb")
	return u.String()
}

// Rule: with its only database down at start, `herald run` serves its
// probes from the first second: /healthz 200 (a liveness probe does not
// kill it), /readyz 503 naming the store and why, /metrics with
// herald_store_up 0. Once the database is up it relays; a lane's table
// dropped under it then makes it not ready naming the lane and `herald
// migrate`, the database still up, until `herald migrate` runs. On a
// PostgreSQL of the test's own.
func TestRunProbesWhileItsDatabaseIsDown(t *testing.T) {
	pg := testenv.NewPostgres(t)
	pg.Start(t)
	createDatabase(t, "pgx", pg.DSN("postgres"))
	pg.Kill()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, fmt.Sprintf(`
store: {driver: postgres, dsn: %q}
brokers:
  out: {type: stdout}
lanes:
  - {name: main, table: main_outbox, destination: "x.{topic}", poll_interval: 50ms}
`, pg.DSN("herald")))
	run := startChild(t, dir, "run", "--config", cfg)
	addr := adminAddr(t, run)
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz with the database down at start: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	waitFor(t, 10*time.Second, "/readyz 503 naming the awaited store", func() bool {
		code, body := readyz(addr)
		return code == http.StatusServiceUnavailable && strings.HasPrefix(body, "store default: not reachable yet") &&
			strings.Contains(body, "connection refused")
	})
	if m := scrape(t, addr); !strings.Contains(m, "herald_store_up 0") {
		t.Errorf("/metrics with the database down at start lacks herald_store_up 0")
	}

	pg.Start(t)
	waitFor(t, 30*time.Second, "/readyz 200 once the database is up", func() bool { code, _ := readyz(addr); return code == http.StatusOK })
	s := openWhenUp(t, pg.DSN("herald"))
	enqueueMany(t, s, "main_outbox", 5)
	waitFor(t, 30*time.Second, "delivered once the database is up", func() bool { return mainStats(t, s).Delivered == 5 })

	if _, err := s.DB().Exec("DROP TABLE main_outbox"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "/readyz 503 naming the lane and herald migrate", func() bool {
		code, body := readyz(addr)
		return code == http.StatusServiceUnavailable &&
			strings.Contains(body, "lane main: table main_outbox does not exist") && strings.Contains(body, "herald migrate")
	})
	if m := scrape(t, addr); !strings.Contains(m, "herald_store_up 1") {
		t.Errorf("a dropped table reported as a database outage: no herald_store_up 1")
	}
	if code, out := runChildSync(t, dir, "migrate", "--config", cfg); code != ExitOK {
		t.Fatalf("herald migrate after the drop: exit %d\n%s", code, out)
	}
	waitFor(t, 30*time.Second, "/readyz 200 once migrated again", func() bool { code, _ := readyz(addr); return code == http.StatusOK })
	enqueueMany(t, s, "main_outbox", 5)
	waitFor(t, 30*time.Second, "delivered once migrated again", func() bool { return mainStats(t, s).Delivered == 5 })
	run.terminate(t)
}
