package mysql

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/heraldhq/herald/store"
)

// TestFairTenantsPlan checks that a step of the tenant walk reads only
// ranges of the tenant_claim index (two dives for the tenant's states, one
// for the next tenant), never a whole index or the rows, and that the
// GROUP BY for lanes with many tenants reads the index alone ("Using
// index"). Schema version 2 keys tenant_claim on virtual columns, on which
// MariaDB does no loose index scan, so only the walk's dives keep the list
// independent of the backlog (see fair.go).
func TestFairTenantsPlan(t *testing.T) {
	s, table := planTable(t, "herald_fairplan")
	q, args := tenantStep("`"+table+"`", store.Scope{Table: table})
	for _, r := range explainRows(t, s.DB(), q, args("t1")) {
		if r.table != "" && (r.key != "tenant_claim" || r.typ != "range") {
			t.Errorf("tenant step reads %s with %q over key %q (%s), want a range of tenant_claim", r.table, r.typ, r.key, r.extra)
		}
	}
	for _, status := range []store.Status{store.StatusPending, store.StatusInFlight} {
		q, args := claimableTenantsQuery("`"+table+"`", status, store.Scope{Table: table}, "t1", 100)
		if key, extra := explain(t, s.DB(), q, args); key != "tenant_claim" || !strings.Contains(extra, "Using index") {
			t.Errorf("tenants with %s rows: key %q, Extra %q, want tenant_claim read alone (Using index)", status, key, extra)
		}
	}
}

// planRow is one row of EXPLAIN.
type planRow struct{ table, typ, key, extra string }

// explainRows is every row of EXPLAIN q.
func explainRows(t *testing.T, db *sql.DB, q string, args []any) []planRow {
	t.Helper()
	rows, err := db.Query("EXPLAIN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []planRow
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var r planRow
		for i, c := range cols {
			field := map[string]*string{"table": &r.table, "type": &r.typ, "key": &r.key, "Extra": &r.extra}[c]
			if field != nil {
				*field = vals[i].String
			}
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		t.Fatalf("EXPLAIN %s: no rows", q)
	}
	return out
}
