package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
	"github.com/heraldhq/herald/store/sqlite"
)

// inspectDB is one database for herald adopt and herald dead on a table
// Herald did not make: how the config names it, how to open it, and the
// spellings its DDL needs.
type inspectDB struct {
	name  string
	store func(dir string) string // the config's store: line
	open  func(t *testing.T, dir string) store.Store
	quote string
	short string // a short string column's type
}

var inspectDBs = []inspectDB{
	{name: "SQLite", quote: `"`, short: "TEXT",
		store: func(dir string) string { return "{driver: sqlite, dsn: " + filepath.Join(dir, "shop.db") + "}" },
		open: func(t *testing.T, dir string) store.Store {
			s, err := sqlite.Open(context.Background(), filepath.Join(dir, "shop.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	{name: "MariaDB", quote: "`", short: "VARCHAR(64)",
		store: func(string) string { return fmt.Sprintf("{driver: mysql, dsn: %q}", testenv.MySQLDSN()) },
		open: func(t *testing.T, _ string) store.Store {
			s, err := mysql.Open(context.Background(), testenv.MySQLDSN(), mysql.Options{})
			if err != nil {
				testenv.Unreachable(t, "MySQL/MariaDB", err)
			}
			return s
		}},
	{name: "PostgreSQL", quote: `"`, short: "TEXT",
		store: func(string) string { return fmt.Sprintf("{driver: postgres, dsn: %q}", testenv.PostgresDSN()) },
		open: func(t *testing.T, _ string) store.Store {
			s, err := postgres.Open(context.Background(), testenv.PostgresDSN(), postgres.Options{})
			if err != nil {
				testenv.Unreachable(t, "PostgreSQL", err)
			}
			return s
		}},
}

// shop is one test's table of a service's own outbox, with a due index
// but none for expired locks, and rows in every state: pending, retryable,
// delivered, two dead (tenants a and b), and one in a value no mapping
// of Herald's words covers (paused).
type shop struct {
	t     *testing.T
	db    inspectDB
	dir   string
	s     store.Store
	table string
}

func newShop(t *testing.T, db inspectDB) *shop {
	t.Helper()
	sh := &shop{t: t, db: db, dir: t.TempDir(), table: testenv.Name("shop_outbox")}
	sh.s = db.open(t, sh.dir)
	t.Cleanup(func() {
		_, _ = sh.s.DB().Exec("DROP TABLE " + sh.q(sh.table))
		sh.s.Close()
	})
	r := strings.NewReplacer("{{T}}", sh.q(sh.table), "{{S}}", db.short, "{{N}}", sh.q(sh.table+"_lock"))
	for _, stmt := range []string{`CREATE TABLE {{T}} (event_id {{S}} NOT NULL PRIMARY KEY, event_type {{S}} NOT NULL,
  app_code {{S}} NOT NULL, payload_json TEXT NOT NULL, created_at_ms BIGINT NOT NULL, status {{S}} NOT NULL,
  retry_count INT NOT NULL DEFAULT 0, next_retry_at_ms BIGINT NOT NULL DEFAULT 0, lock_until_ms BIGINT NOT NULL DEFAULT 0,
  worker_id {{S}} NOT NULL DEFAULT '', last_error TEXT NULL)`,
		// The old worker's index for its own reclaims: not the one Herald's
		// claims read, which herald adopt proposes.
		`CREATE INDEX {{N}} ON {{T}} (status, lock_until_ms)`,
		`INSERT INTO {{T}} (event_id, event_type, app_code, payload_json, created_at_ms, status, retry_count, last_error) VALUES
  ('ev-1', 'OrderPaid', 'a', '{"n":1}', 1000, 'pending', 0, NULL),
  ('ev-2', 'OrderPaid', 'a', '{"n":2}', 1000, 'retryable', 2, 'timeout'),
  ('ev-3', 'OrderPaid', 'a', '{"n":3}', 1000, 'delivered', 0, NULL),
  ('ev-4', 'OrderPaid', 'a', '{"n":4}', 1000, 'dead', 5, 'broker said no'),
  ('ev-5', 'OrderShipped', 'b', '{"n":5}', 1000, 'dead', 3, 'too big'),
  ('ev-6', 'OrderPaid', 'a', '{"n":6}', 1000, 'paused', 0, NULL)`} {
		sh.exec(r.Replace(stmt))
	}
	return sh
}

func (sh *shop) q(name string) string { return sh.db.quote + name + sh.db.quote }

func (sh *shop) exec(stmt string) {
	sh.t.Helper()
	if _, err := sh.s.DB().Exec(stmt); err != nil {
		sh.t.Fatalf("%s: %v", stmt, err)
	}
}

// config writes a config whose lane "plain" is Herald's own and whose
// lane "shop", when given, is the YAML of a lane list entry, and returns
// its path.
func (sh *shop) config(shopLane string) string {
	sh.t.Helper()
	cfg := filepath.Join(sh.dir, "herald.yaml")
	writeFile(sh.t, cfg, "store: "+sh.db.store(sh.dir)+"\nbrokers:\n  out: {type: stdout}\nlanes:\n"+
		"  - {name: plain, table: "+testenv.Name("plain_outbox")+", destination: x}\n"+shopLane)
	return cfg
}

// shopLane is the lane that reads the shop table, its mapping in flow
// style; columns replaces the columns mapping when not empty.
func (sh *shop) lane(columns string) string {
	if columns == "" {
		columns = "{id: event_id, type: event_type, tenant: app_code, payload: payload_json, created_at: created_at_ms, " +
			"status: status, attempts: retry_count, next_attempt: next_retry_at_ms, lease_until: lock_until_ms, " +
			"lease_owner: worker_id, last_error: last_error}"
	}
	return "  - name: shop\n    table: " + sh.table + "\n    destination: shop\n    columns: " + columns +
		"\n    statuses: {pending: [pending, retryable], in_flight: delivering, delivered: delivered, dead: dead}" +
		"\n    time_unit: epoch_ms\n"
}

// Rule: `herald adopt --table T` proposes the lane mapping the table's
// column names, types and status values suggest, as YAML that pastes under
// lanes:, notes the status value it cannot place, and prints the index the
// claims need that the table lacks as a CREATE INDEX statement the
// database runs; pasted, with that value placed and that index made,
// `herald adopt --lane` finds nothing wrong (exit 0).
func TestAdoptProposesMapping(t *testing.T) {
	for _, db := range inspectDBs {
		t.Run(db.name, func(t *testing.T) { testAdoptProposes(t, db) })
	}
}

func testAdoptProposes(t *testing.T, db inspectDB) {
	sh := newShop(t, db)
	cfg := sh.config("")
	code, out, errOut := cliRun(t, "adopt", "--table", sh.table, "--config", cfg)
	if code != ExitOK {
		t.Fatalf("adopt --table: exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"    id: event_id\n", "    type: event_type\n", "    tenant: app_code\n",
		"    payload: payload_json\n", "    created_at: created_at_ms\n", "    attempts: retry_count\n",
		"    next_attempt: next_retry_at_ms\n", "    lease_until: lock_until_ms\n", "    lease_owner: worker_id\n",
		"    last_error: last_error\n", "    pending:\n      - pending\n      - retryable\n", "    delivered: delivered\n",
		"    dead: dead\n", "  time_unit: epoch_ms\n", `# check statuses: value "paused" (1 rows) is placed in no state`,
		"# CREATE INDEX " + sh.q(sh.table+"_herald_due") + " ON " + sh.q(sh.table) + " (" + sh.q("status") + ", " + sh.q("next_retry_at_ms") + ");"} {
		if !strings.Contains(out, want) {
			t.Errorf("the proposal does not say %q:\n%s", want, out)
		}
	}
	// VARCHAR status and owner columns on MariaDB: CHAR is proposed
	// (docs/adopt.md, How fast); elsewhere the note would be no use.
	charNote := "# check columns.status: column status is VARCHAR: declared CHAR of the same width"
	if strings.Contains(out, charNote) != (db.name == "MariaDB") {
		t.Errorf("the proposal's CHAR note on %s: want it %v:\n%s", db.name, db.name == "MariaDB", out)
	}
	if strings.Contains(out, "_herald_lease") || strings.Contains(out, "_herald_id") {
		t.Errorf("the proposal asks for an index the claims do not read (status, lock_until_ms), or one the table has (its primary key):\n%s", out)
	}
	// Paste it (with a broker's destination) and check it against the table.
	lane := strings.Replace(yamlOf(out), "  table: ", "  destination: shop\n  table: ", 1)
	cfg = sh.config(indent(lane, "  "))
	code, out, errOut = cliRun(t, "adopt", "--lane", sh.table, "--config", cfg)
	if code != ExitUsage || !strings.Contains(out, `lanes[1] (`+sh.table+`).statuses: value "paused" (1 rows) is in no state`) {
		t.Fatalf("adopt --lane with a value in no state: exit %d, want %d naming it: %s%s", code, ExitUsage, out, errOut)
	}
	sh.exec("UPDATE " + sh.q(sh.table) + " SET status = 'pending' WHERE status = 'paused'")
	sh.exec(createIndex(t, out))
	code, out, errOut = cliRun(t, "adopt", "--lane", sh.table, "--config", cfg)
	if code != ExitOK || !strings.Contains(out, "its mapping matches table "+sh.table) || strings.Contains(out, "CREATE INDEX") {
		t.Fatalf("adopt --lane after the fixes: exit %d, want 0 with nothing to fix: %s%s", code, out, errOut)
	}
}

// yamlOf is the YAML lines of herald adopt's output, without its comments.
func yamlOf(out string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		if !strings.HasPrefix(line, "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

func indent(text, prefix string) string {
	return regexp.MustCompile(`(?m)^(.)`).ReplaceAllString(text, prefix+"$1")
}

// createIndex is the one CREATE INDEX statement herald adopt printed.
func createIndex(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^# (CREATE INDEX .*);$`).FindAllStringSubmatch(out, -1)
	if len(m) != 1 {
		t.Fatalf("want one CREATE INDEX, got %d:\n%s", len(m), out)
	}
	return m[0][1]
}

// Rule: `herald adopt --lane` checks the lane's mapping against its table
// with the start-time check of herald run, and exits 2 naming the key path
// of each mismatch: a mapped column the table lacks, a column whose type
// does not fit its use, a status value no state covers; and the table's
// key path when the table does not exist.
func TestAdoptChecksLaneMapping(t *testing.T) {
	for _, db := range inspectDBs {
		t.Run(db.name, func(t *testing.T) { testAdoptChecks(t, db) })
	}
}

func testAdoptChecks(t *testing.T, db inspectDB) {
	sh := newShop(t, db)
	cfg := sh.config(sh.lane("{id: event_id, type: event_type, payload: payload_json, status: status, " +
		"next_attempt: next_retry_at_ms, lease_until: lock_until, lease_owner: worker_id, attempts: last_error}"))
	code, out, errOut := cliRun(t, "adopt", "--lane", "shop", "--json", "--config", cfg)
	if code != ExitUsage || !strings.Contains(errOut, "lanes[1] (shop): the mapping does not match table "+sh.table) {
		t.Fatalf("exit %d, want %d: %s%s", code, ExitUsage, out, errOut)
	}
	var r struct {
		Problems      []string `json:"problems"`
		CreateIndexes []string `json:"create_indexes"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []string{
		"lanes[1] (shop).columns.lease_until: column lock_until is not in table " + sh.table,
		"lanes[1] (shop).columns.attempts: column last_error is text, not an integer",
		`lanes[1] (shop).statuses: value "paused" (1 rows) is in no state: those rows are never relayed`,
	}
	if fmt.Sprint(r.Problems) != fmt.Sprint(want) {
		t.Errorf("problems:\n%q\nwant\n%q", r.Problems, want)
	}
	if strings.Contains(strings.Join(r.CreateIndexes, "\n"), "lock_until") {
		t.Errorf("indexes proposed on a column the table lacks: %q", r.CreateIndexes)
	}
	sh.exec("DROP TABLE " + sh.q(sh.table))
	code, _, errOut = cliRun(t, "adopt", "--lane", "shop", "--config", cfg)
	if code != ExitUsage || !strings.Contains(errOut, "lanes[1] (shop).table: table "+sh.table+" does not exist in store default") {
		t.Errorf("missing table: exit %d, want %d naming lanes[1] (shop).table: %s", code, ExitUsage, errOut)
	}
}

// Rule: `herald dead list|show|replay|purge` work on a mapped table through
// its mapping: list shows the rows in the dead status value (paged by
// event id, filtered by tenant), show one with its payload, replay puts a
// dead row back to the first pending value, due now, its attempts column
// at 0 and its last error kept, and refuses a row that is not dead; purge
// deletes the dead rows and nothing else. Replay by query selects the
// mapped table's rows through its mapping (a dry run counts and shows
// them).
func TestAdoptDeadOnMappedTable(t *testing.T) {
	for _, db := range inspectDBs {
		t.Run(db.name, func(t *testing.T) { testAdoptDead(t, db) })
	}
}

func testAdoptDead(t *testing.T, db inspectDB) {
	sh := newShop(t, db)
	cfg := sh.config(sh.lane(""))
	if code, out, errOut := cliRun(t, "migrate", "--config", cfg); code != ExitOK {
		t.Fatalf("migrate: exit %d: %s%s", code, out, errOut)
	}
	dead := func(args ...string) string {
		t.Helper()
		code, out, errOut := cliRun(t, append(append([]string{"dead"}, args...), "--lane", "shop", "--config", cfg)...)
		if code != ExitOK {
			t.Fatalf("dead %v: exit %d: %s%s", args, code, out, errOut)
		}
		return out
	}
	if out := dead("list", "--json"); strings.Count(out, "\n") != 2 || !strings.Contains(out, `"event_id":"ev-4"`) ||
		!strings.Contains(out, `"attempts":5`) || !strings.Contains(out, `"last_error":"broker said no"`) ||
		!strings.Contains(out, `"event_id":"ev-5"`) {
		t.Errorf("dead list: want ev-4 and ev-5 only:\n%s", out)
	}
	if out := dead("list", "--limit", "1", "--after", "ev-4"); !strings.Contains(out, "ev-5") || strings.Contains(out, "ev-4") {
		t.Errorf("dead list after ev-4: want ev-5 only:\n%s", out)
	}
	if out := dead("list", "--tenant", "a"); !strings.Contains(out, "ev-4") || strings.Contains(out, "ev-5") {
		t.Errorf("dead list --tenant a: want ev-4 only:\n%s", out)
	}
	if out := dead("show", "ev-5"); !strings.Contains(out, `"status": "dead"`) || !strings.Contains(out, `"n": 5`) {
		t.Errorf("dead show ev-5:\n%s", out)
	}
	code, out, errOut := cliRun(t, "dead", "replay", "ev-4", "ev-1", "--wait", "0", "--lane", "shop", "--config", cfg)
	if code != ExitFailure || !strings.Contains(out, "replayed 1 dead event(s)") || !strings.Contains(errOut, "event ev-1 is pending, not dead") {
		t.Errorf("dead replay ev-4 ev-1: exit %d: %s%s", code, out, errOut)
	}
	sh.checkReplayed("ev-4")
	code, out, errOut = cliRun(t, "replay", "--all", "--dry-run", "--json", "--lane", "shop", "--config", cfg)
	if code != ExitOK || !strings.Contains(out, `"count":1`) || !strings.Contains(out, `"event_id":"ev-5"`) {
		t.Errorf("replay --all --dry-run on a mapped table: exit %d, want ev-5 alone: %s%s", code, out, errOut)
	}
	if out := dead("purge", "--all", "--yes"); !strings.Contains(out, "purged 1 dead event(s)") {
		t.Errorf("dead purge --all: %s", out)
	}
	var left []string
	rows, err := sh.s.DB().Query("SELECT event_id FROM " + sh.q(sh.table) + " ORDER BY event_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		left = append(left, id)
	}
	if fmt.Sprint(left) != "[ev-1 ev-2 ev-3 ev-4 ev-6]" {
		t.Errorf("rows after the purge: %v, want all but the dead ev-5", left)
	}
}

// checkReplayed checks that id is back to pending, due, with no attempts
// counted and its last error kept.
func (sh *shop) checkReplayed(id string) {
	sh.t.Helper()
	var status string
	var attempts, next int64
	var lastErr sql.NullString
	err := sh.s.DB().QueryRow("SELECT status, retry_count, next_retry_at_ms, last_error FROM "+sh.q(sh.table)+
		" WHERE event_id = '"+id+"'").Scan(&status, &attempts, &next, &lastErr)
	if err != nil {
		sh.t.Fatal(err)
	}
	if status != "pending" || attempts != 0 || next < 1_700_000_000_000 || lastErr.String != "broker said no" {
		sh.t.Errorf("%s after replay: status %q, retry_count %d, next_retry_at_ms %d, last_error %q; want pending, 0, now, kept",
			id, status, attempts, next, lastErr.String)
	}
}

// Rule: on a table whose time columns are datetimes (MariaDB DATETIME,
// PostgreSQL timestamptz), `herald adopt --table` proposes time_unit
// datetime, guesses the states no row shows yet, and its proposal passes
// `herald adopt --lane`; a time column of neither unit (PostgreSQL's
// timestamp without time zone) is named with its key path, exit 2.
func TestAdoptProposesDatetime(t *testing.T) {
	for _, db := range inspectDBs[1:] {
		t.Run(db.name, func(t *testing.T) {
			datetime := map[string]string{"MariaDB": "DATETIME(3)", "PostgreSQL": "TIMESTAMPTZ"}[db.name]
			sh := &shop{t: t, db: db, dir: t.TempDir(), table: testenv.Name("dated_outbox")}
			sh.s = db.open(t, sh.dir)
			t.Cleanup(func() {
				_, _ = sh.s.DB().Exec("DROP TABLE " + sh.q(sh.table))
				sh.s.Close()
			})
			ddl := "CREATE TABLE " + sh.q(sh.table) + " (id " + db.short + " NOT NULL PRIMARY KEY, type " + db.short +
				" NOT NULL, payload TEXT NOT NULL, created_at {{D}} NOT NULL, state " + db.short + " NOT NULL, " +
				"available_at {{D}} NOT NULL, locked_until {{D}} NULL, locked_by " + db.short + " NULL)"
			sh.exec(strings.ReplaceAll(ddl, "{{D}}", datetime))
			code, out, errOut := cliRun(t, "adopt", "--table", sh.table, "--config", sh.config(""))
			for _, want := range []string{"  time_unit: datetime\n", "    next_attempt: available_at\n",
				"    lease_until: locked_until\n", "    lease_owner: locked_by\n", "    status: state\n",
				"# check statuses.dead: no row has a value for it yet; \"dead\" is a guess"} {
				if !strings.Contains(out, want) {
					t.Errorf("the proposal does not say %q:\n%s", want, out)
				}
			}
			if code != ExitOK {
				t.Fatalf("adopt --table: exit %d: %s%s", code, out, errOut)
			}
			lane := strings.Replace(yamlOf(out), "  table: ", "  destination: x\n  table: ", 1)
			code, out, errOut = cliRun(t, "adopt", "--lane", sh.table, "--config", sh.config(indent(lane, "  ")))
			if code != ExitOK || strings.Count(out, "# CREATE INDEX") != 1 || !strings.Contains(out, "available_at") {
				t.Fatalf("adopt --lane: exit %d, want 0 and the (status, available_at) index: %s%s", code, out, errOut)
			}
			if db.name != "PostgreSQL" {
				return
			}
			sh.exec("ALTER TABLE " + sh.q(sh.table) + " ALTER COLUMN locked_until TYPE TIMESTAMP")
			code, out, errOut = cliRun(t, "adopt", "--table", sh.table, "--config", sh.config(""))
			if code != ExitUsage || !strings.Contains(out,
				"# columns.lease_until: column locked_until is timestamp without time zone, which time_unit datetime does not fit") {
				t.Errorf("timestamp without time zone: exit %d, want %d naming columns.lease_until: %s%s", code, ExitUsage, out, errOut)
			}
		})
	}
}
