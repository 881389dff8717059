package cli

import (
	"strings"
	"testing"
)

// Rule: `herald config check` checks each mapped lane's table against its
// mapping with herald run's start-time check and the status values in the
// rows: exit 2 with each problem on stderr under its key path (a mapped
// column the table lacks, a column whose type does not fit its use, a
// status value no state covers, a table that does not exist), the
// indexes the claims need that the table lacks printed as comments; a
// table that matches passes; --offline checks the file alone.
func TestAdoptConfigCheckMappedTable(t *testing.T) {
	for _, db := range inspectDBs {
		t.Run(db.name, func(t *testing.T) { testAdoptConfigCheck(t, db) })
	}
}

func testAdoptConfigCheck(t *testing.T, db inspectDB) {
	sh := newShop(t, db)
	bad := sh.config(sh.lane("{id: event_id, type: event_type, payload: payload_json, status: status, " +
		"next_attempt: next_retry_at_ms, lease_until: lock_until, lease_owner: worker_id, attempts: last_error}"))
	code, out, errOut := cliRun(t, "config", "check", "--config", bad)
	for _, want := range []string{
		"lanes[1] (shop).columns.lease_until: column lock_until is not in table " + sh.table + "\n",
		"lanes[1] (shop).columns.attempts: column last_error is text, not an integer\n",
		`lanes[1] (shop).statuses: value "paused" (1 rows) is in no state: those rows are never relayed` + "\n",
		"3 mapped table problem(s) listed above",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("config check of a mismatched mapping: stderr lacks %q", want)
		}
	}
	if code != ExitUsage || strings.Contains(out, "config ok") {
		t.Errorf("config check of a mismatched mapping: exit %d, want %d: %s%s", code, ExitUsage, out, errOut)
	}
	if code, out, errOut := cliRun(t, "config", "check", "--offline", "--config", bad); code != ExitOK || !strings.Contains(out, "config ok") {
		t.Errorf("config check --offline: exit %d, want 0: %s%s", code, out, errOut)
	}

	// The good mapping, with "paused" placed: ok, and the missing due index
	// proposed as a comment.
	good := sh.config(strings.Replace(sh.lane(""), "pending: [pending, retryable]", "pending: [pending, retryable, paused]", 1))
	code, out, errOut = cliRun(t, "config", "check", "--config", good)
	if code != ExitOK || !strings.Contains(out, "config ok") || !strings.Contains(out, "# lanes[1] (shop): table "+sh.table+
		" lacks an index its claims need: CREATE INDEX") || !strings.Contains(out, "next_retry_at_ms") {
		t.Errorf("config check of a matching mapping: exit %d, want 0 with the due index proposed: %s%s", code, out, errOut)
	}

	sh.exec("DROP TABLE " + sh.q(sh.table))
	code, out, errOut = cliRun(t, "config", "check", "--config", good)
	if code != ExitUsage || !strings.Contains(errOut, "lanes[1] (shop).table: table "+sh.table+" does not exist in store default") {
		t.Errorf("config check of a missing table: exit %d, want %d naming lanes[1] (shop).table: %s%s", code, ExitUsage, out, errOut)
	}
}

// Rule: for a lane with ordering: key, `herald adopt --lane` (and config
// check) print the indexes its ordered claims need that the table lacks,
// (key, created_at) and (status, created_at), and no longer once made.
func TestAdoptOrderedLaneIndexes(t *testing.T) {
	for _, db := range inspectDBs {
		t.Run(db.name, func(t *testing.T) {
			sh := newShop(t, db)
			cfg := sh.config(strings.Replace(sh.lane("{id: event_id, type: event_type, key: app_code, payload: payload_json, "+
				"created_at: created_at_ms, status: status, attempts: retry_count, next_attempt: next_retry_at_ms, "+
				"lease_until: lock_until_ms, lease_owner: worker_id, last_error: last_error}"), "pending: [pending, retryable]",
				"pending: [pending, retryable, paused]", 1) + "    ordering: key\n")
			var stmts []string
			for _, args := range [][]string{{"adopt", "--lane", "shop"}, {"config", "check"}} {
				code, out, errOut := cliRun(t, append(args, "--config", cfg)...)
				if code != ExitOK {
					t.Fatalf("%v: exit %d: %s%s", args, code, out, errOut)
				}
				for _, cols := range []string{"app_code" + db.quote + ", " + db.quote + "created_at_ms", "status" + db.quote + ", " + db.quote + "created_at_ms"} {
					if !strings.Contains(out, cols) {
						t.Errorf("%v: no CREATE INDEX on (%s):\n%s", args, cols, out)
					}
				}
				stmts = regexpAll(out)
			}
			for _, s := range stmts {
				if strings.Contains(s, "created_at_ms") {
					sh.exec(s)
				}
			}
			if code, out, errOut := cliRun(t, "adopt", "--lane", "shop", "--config", cfg); code != ExitOK || strings.Contains(strings.Join(regexpAll(out), "\n"), "created_at_ms") {
				t.Errorf("after the indexes were made: exit %d, still proposed: %s%s", code, out, errOut)
			}
		})
	}
}

// regexpAll returns the CREATE INDEX statements in a command's comments.
func regexpAll(out string) []string {
	var stmts []string
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, "CREATE INDEX"); i >= 0 {
			stmts = append(stmts, strings.TrimSuffix(line[i:], ";"))
		}
	}
	return stmts
}
