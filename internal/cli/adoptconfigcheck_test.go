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

	// The good mapping, with "paused" placed: ok, and the missing lease index
	// proposed as a comment.
	good := sh.config(strings.Replace(sh.lane(""), "pending: [pending, retryable]", "pending: [pending, retryable, paused]", 1))
	code, out, errOut = cliRun(t, "config", "check", "--config", good)
	if code != ExitOK || !strings.Contains(out, "config ok") || !strings.Contains(out, "# lanes[1] (shop): table "+sh.table+
		" lacks an index its claims need: CREATE INDEX") || !strings.Contains(out, "lock_until_ms") {
		t.Errorf("config check of a matching mapping: exit %d, want 0 with the lease index proposed: %s%s", code, out, errOut)
	}

	sh.exec("DROP TABLE " + sh.q(sh.table))
	code, out, errOut = cliRun(t, "config", "check", "--config", good)
	if code != ExitUsage || !strings.Contains(errOut, "lanes[1] (shop).table: table "+sh.table+" does not exist in store default") {
		t.Errorf("config check of a missing table: exit %d, want %d naming lanes[1] (shop).table: %s%s", code, ExitUsage, out, errOut)
	}
}
