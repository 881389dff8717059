package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/dbtest"
)

// TestClaimPlans checks that the claim's locking read runs off the index
// made for it, in index order (no filesort): with and without a tenant, and
// for ordered lanes, on a table where most rows are delivered.
func TestClaimPlans(t *testing.T) {
	s, table := planTable(t, "herald_plan")
	for _, tc := range []struct {
		scope   store.Scope
		ordered bool
		index   string
	}{
		{store.Scope{Table: table}, false, "claim"},
		{store.Scope{Table: table, Tenant: "t1"}, false, "tenant_claim"},
		{store.Scope{Table: table}, true, "ordered_claim"},
	} {
		for _, status := range []store.Status{store.StatusPending, store.StatusInFlight} {
			p := store.ClaimParams{Scope: tc.scope, Limit: 100, Ordered: tc.ordered}
			q, args := candidateQuery("`"+table+"`", status, p, 100)
			key, extra := explain(t, s.DB(), q, args)
			// With no in-flight rows at all, either index finds none at
			// once; the optimizer may take the shorter one.
			indexOK := key == tc.index || status == store.StatusInFlight && strings.HasSuffix(key, "claim")
			if !indexOK || strings.Contains(extra, "filesort") {
				t.Errorf("claim of %s rows, tenant %q, ordered %v: key %q, extra %q; want key %q and no filesort",
					status, tc.scope.Tenant, tc.ordered, key, extra, tc.index)
			}
		}
	}
}

// TestClaimPlanAfterCursor checks the claim that goes on from a cursor
// (cursor.go): off the claim index, in its order, starting at the cursor.
func TestClaimPlanAfterCursor(t *testing.T) {
	s, table := planTable(t, "herald_plan_cursor")
	var at time.Time
	var id int64
	if err := s.DB().QueryRow("SELECT available_at, id FROM `"+table+"` WHERE status = 'pending' ORDER BY available_at, id LIMIT 1 OFFSET 500").
		Scan(&at, &id); err != nil {
		t.Fatal(err)
	}
	p := store.ClaimParams{Scope: store.Scope{Table: table}, Limit: 100}
	q, args := pendingAfterQuery("`"+table+"`", p, 100, claimCursor{at: at, id: id})
	key, extra := explain(t, s.DB(), q, args)
	if key != "claim" || strings.Contains(extra, "filesort") {
		t.Errorf("claim after a cursor: key %q, extra %q; want key claim and no filesort", key, extra)
	}
}

// planTable is a migrated outbox table named after prefix, filled by
// fillForPlans, on a store closed (and the table dropped) after the test.
func planTable(t *testing.T, prefix string) (*Store, string) {
	t.Helper()
	s, table := migratedTable(t, prefix)
	fillForPlans(t, s.DB(), table)
	return s, table
}

// migratedTable opens a Store on the test server and migrates a fresh
// table named after prefix, for every kind of lane; both go after the test.
func migratedTable(t *testing.T, prefix string) (*Store, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, testenv.MySQLDSN(), Options{})
	if err != nil {
		testenv.Unreachable(t, "MySQL/MariaDB", err)
	}
	t.Cleanup(func() { s.Close() })
	table := testenv.Name(prefix)
	// With the ordered and tenant indexes: the plans of every claim are checked.
	if err := s.MigrateFor(ctx, table, store.TableUse{Ordered: true, Tenants: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dbtest.Drop(s, table) })
	return s, table
}

// fillForPlans writes 3000 rows of three tenants, two thirds delivered.
func fillForPlans(t *testing.T, db *sql.DB, table string) {
	t.Helper()
	var vals []string
	for i := range 3000 {
		status := "delivered"
		if i%3 == 0 {
			status = "pending"
		}
		vals = append(vals, fmt.Sprintf("('e%d', 't%d', 'x', 'X', '', '%s')", i, i%3, status))
	}
	if _, err := db.Exec("INSERT INTO `" + table + "` (event_id, tenant, topic, event_type, payload, status) VALUES " +
		strings.Join(vals, ", ")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("ANALYZE TABLE `" + table + "`"); err != nil {
		t.Fatal(err)
	}
}

// explain returns the key and Extra columns of the plan's row for the
// claimed table (alias r); an ordered claim's subquery has a row of its own.
func explain(t *testing.T, db *sql.DB, q string, args []any) (key, extra string) {
	t.Helper()
	for _, r := range explainRows(t, db, q, args) {
		if r.table == "r" {
			key, extra = r.key, r.extra
		}
	}
	return key, extra
}
