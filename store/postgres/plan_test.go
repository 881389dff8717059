package postgres

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/dbtest"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// TestClaimPlans checks that the claim's locking reads run off the partial
// index made for them, in index order (no Sort), with and without a
// tenant, ordered or not, on a table where most rows are delivered, with
// and without statistics.
func TestClaimPlans(t *testing.T) {
	s, table := planTable(t, "herald_plan", store.TableUse{Ordered: true})
	// First as the table is now, filled but not yet analyzed (a queue's
	// usual state), then with statistics.
	checkPlans(t, s.DB(), table, "before ANALYZE")
	checkJoinPlan(t, s.DB(), table, "before ANALYZE")
	if _, err := s.DB().Exec(`ANALYZE "` + table + `"`); err != nil {
		t.Fatal(err)
	}
	checkPlans(t, s.DB(), table, "after ANALYZE")
	checkJoinPlan(t, s.DB(), table, "after ANALYZE")
}

// checkJoinPlan checks that the claim's UPDATE finds the picked rows by
// primary key (a Nested Loop), at batch sizes up to 1000. With statistics
// on a table of a few tens of thousands of rows the planner preferred a
// Hash Join that read the whole table through its primary key for every
// claim (270 ms against 146 ms for 1000 of 20,000 rows, and growing with
// the table).
func checkJoinPlan(t *testing.T, db *sql.DB, table, when string) {
	t.Helper()
	for _, limit := range []int{100, 1000} {
		q, args := unorderedClaim(`"`+table+`"`, store.ClaimParams{Scope: store.Scope{Table: table}, Limit: limit})
		plan := explain(t, db, q, args)
		if !strings.Contains(plan, "Nested Loop") || strings.Contains(plan, "Hash Join") || strings.Contains(plan, "Merge Join") {
			t.Errorf("%s: claim of %d: want the picked rows joined by a Nested Loop on the primary key; plan:\n%s", when, limit, plan)
		}
	}
}

func checkPlans(t *testing.T, db *sql.DB, table, when string) {
	t.Helper()
	for _, tc := range []struct {
		scope store.Scope
		index string
	}{
		{store.Scope{Table: table}, table + "_claim"},
		{store.Scope{Table: table, Tenant: "t1"}, table + "_tenant_claim"},
	} {
		for _, ordered := range []bool{false, true} {
			extra, index := "", tc.index
			if ordered {
				extra = " AND (r.partition_key = '' OR NOT EXISTS (" + blockedByState(`"`+table+`"`, false) + "))"
				index = table + "_ordered_claim"
			}
			p := store.ClaimParams{Scope: tc.scope, Limit: 100, Ordered: ordered}
			cte, args := candidates(`"`+table+`"`, p, extra)
			plan := explain(t, db, sqlbuild.Rebind(cte+" SELECT * FROM picked"), args)
			if !strings.Contains(plan, "Index Scan using "+index+" ") || strings.Contains(plan, "Sort") {
				t.Errorf("%s: claim, tenant %q, ordered %v: want an index scan of %s and no Sort; plan:\n%s",
					when, tc.scope.Tenant, ordered, index, plan)
			}
		}
	}
}

// planTable opens the store and makes a table for use named after prefix,
// filled by fillForPlans and dropped when the test ends.
func planTable(t *testing.T, prefix string, use store.TableUse) (*Store, string) {
	t.Helper()
	ctx, s := openForPlans(t)
	table := testenv.Name(prefix)
	if err := s.MigrateFor(ctx, table, use); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dbtest.Drop(s, table) })
	fillForPlans(t, s.DB(), table)
	return s, table
}

// fillForPlans writes 30000 rows of three tenants, two thirds delivered.
func fillForPlans(t *testing.T, db *sql.DB, table string) {
	t.Helper()
	var vals []string
	for i := range 30000 {
		status := "delivered"
		if i%3 == 0 {
			status = "pending"
		}
		vals = append(vals, fmt.Sprintf("('e%d', 't%d', 'x', 'X', 'k%d', '%s')", i, i%3, i%50, status))
	}
	if _, err := db.Exec(`INSERT INTO "` + table + `" (event_id, tenant, topic, event_type, partition_key, status) VALUES ` +
		strings.Join(vals, ", ")); err != nil {
		t.Fatal(err)
	}
}

// explain returns the plan of q as text, planned under the claim's
// planSettings as Claim does.
func explain(t *testing.T, db *sql.DB, q string, args []any) string {
	t.Helper()
	return explainUnder(t, db, planSettings, q, args)
}

// planOf returns the plan of q as text, planned on db.
func planOf(t *testing.T, db interface {
	Query(string, ...any) (*sql.Rows, error)
}, q string, args []any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// TestMarkPlans checks that every fenced statement (a mark, retry, kill,
// release or discard of a claimed batch) finds its rows by primary key,
// one probe per row, and never reads the claim index or the whole table:
// on a table filled but not yet analyzed, and with statistics.
func TestMarkPlans(t *testing.T) {
	s, table := planTable(t, "herald_markplan", store.TableUse{})
	// A claimed batch: 1000 of the pending rows in flight under token 7.
	if _, err := s.DB().Exec(`UPDATE "` + table + `" SET status = 'in_flight', lease_token = 7
WHERE id IN (SELECT id FROM "` + table + `" WHERE status = 'pending' ORDER BY id LIMIT 1000)`); err != nil {
		t.Fatal(err)
	}
	ids := claimedIDs(t, s.DB(), table)
	checkMarkPlans(t, s.DB(), table, ids, "before ANALYZE")
	if _, err := s.DB().Exec(`ANALYZE "` + table + `"`); err != nil {
		t.Fatal(err)
	}
	checkMarkPlans(t, s.DB(), table, ids, "after ANALYZE")
}

// claimedIDs returns the ids of table's rows in flight.
func claimedIDs(t *testing.T, db *sql.DB, table string) []int64 {
	t.Helper()
	rows, err := db.Query(`SELECT id FROM "` + table + `" WHERE status = 'in_flight' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if len(ids) != 1000 {
		t.Fatalf("%d rows in flight, want 1000", len(ids))
	}
	return ids
}

func checkMarkPlans(t *testing.T, db *sql.DB, table string, ids []int64, when string) {
	t.Helper()
	texts := make([]string, len(ids))
	waits := make([]int64, len(ids))
	for _, tc := range []struct {
		op   string
		head string
		args []any
	}{
		{"complete", completeHead, []any{ids, texts}},
		{"retry", retryHead, []any{ids, texts, waits}},
		{"kill", killHead, []any{ids, texts}},
		{"release", releaseHead, []any{ids}},
		{"discard", discardHead, []any{ids}},
	} {
		plan := shortPlan(explainUnder(t, db, markPlanSettings, fencedQuery(tc.head, `"`+table+`"`), append(tc.args, int64(7))))
		// An Index Scan probes per row of the join; a Bitmap Index Scan of
		// "id = ANY(ids)" probes the same entries at once.
		if !strings.Contains(plan, "Index Scan using "+table+"_pkey ") && !strings.Contains(plan, "Bitmap Index Scan on "+table+"_pkey ") {
			t.Errorf("%s: %s: want the rows probed by primary key; plan:\n%s", when, tc.op, plan)
		}
		for _, bad := range []string{table + "_claim", table + "_done", "Seq Scan", "Hash Join", "Merge Join"} {
			if strings.Contains(plan, bad) {
				t.Errorf("%s: %s: plan uses %s:\n%s", when, tc.op, bad, plan)
			}
		}
	}
}

// shortPlan cuts each line of plan to 160 characters: the batch's ids
// appear in it as literals.
func shortPlan(plan string) string {
	lines := strings.Split(plan, "\n")
	for i, l := range lines {
		if len(l) > 160 {
			lines[i] = l[:160] + "…"
		}
	}
	return strings.Join(lines, "\n")
}

// explainUnder returns the plan of q as text, planned after settings (whose
// $1 is a bound) in one transaction, as a claim or mark runs.
func explainUnder(t *testing.T, db *sql.DB, settings, q string, args []any) string {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	if _, err := tx.Exec(settings, boundArg(time.Second)); err != nil {
		t.Fatal(err)
	}
	return planOf(t, tx, q, args)
}
