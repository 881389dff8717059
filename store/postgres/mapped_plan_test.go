package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// TestAdoptMappedClaimPlan: a mapped table's claim reads only the picked rows
// of the table when it leases them, before and after ANALYZE, at batch
// sizes up to 1,000. With the join alone, on an analyzed table of 30,000
// pending rows, the planner hashed the whole table for every claim.
func TestAdoptMappedClaimPlan(t *testing.T) {
	ctx, s := openForPlans(t)
	table := mappedPlanTable(ctx, t, s, "herald_mplan", "VARCHAR(16) NOT NULL DEFAULT 'pending'", textStatuses)
	check := func(when string) {
		for _, limit := range []int{100, 1000} {
			q, args := s.mapped.Get(table).ClaimStatement(store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w",
				Token: 1, Lease: time.Minute, Limit: limit})
			plan := planOf(t, s.DB(), q, args) // one statement in autocommit, as a claim runs it
			if strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s: claim of %d reads the whole table; plan:\n%s", when, limit, plan)
			}
		}
	}
	check("before ANALYZE")
	if _, err := s.DB().ExecContext(ctx, `ANALYZE "`+table+`"`); err != nil {
		t.Fatal(err)
	}
	check("after ANALYZE")
}

// openForPlans opens a store on the test server for a plan test, closed
// with the test, and a context that bounds it.
func openForPlans(t *testing.T) (context.Context, *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	s, err := Open(ctx, testenv.PostgresDSN(), Options{})
	if err != nil {
		testenv.Unreachable(t, "PostgreSQL", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return ctx, s
}

// TestAdoptMappedMarkPlan: a mapped table's mark finds its rows by the
// event id's key, one probe per row, on a table analyzed while every row
// was pending (a queue's usual state: its statistics predate its backlog),
// and marks them, with a text and with an integer status column. Left to
// compare the status column, the planner took "status = in flight" for a
// handful of rows and read the status index's whole in-flight range, dead
// entries of earlier claims included, for every mark.
func TestAdoptMappedMarkPlan(t *testing.T) {
	ctx, s := openForPlans(t)
	for _, c := range []struct {
		typ      string
		statuses store.Statuses
	}{
		{"VARCHAR(16) NOT NULL DEFAULT 'pending'", textStatuses},
		{"SMALLINT NOT NULL DEFAULT 0", store.Statuses{Pending: store.StatusValues{"0"}, InFlight: "1", Delivered: "2", Dead: "3"}},
	} {
		t.Run(strings.Fields(c.typ)[0], func(t *testing.T) {
			table := mappedPlanTable(ctx, t, s, "herald_mmark", c.typ, c.statuses)
			if _, err := s.DB().ExecContext(ctx, `ANALYZE "`+table+`"`); err != nil {
				t.Fatal(err)
			}
			checkMappedMarks(ctx, t, s, table, c.statuses.Delivered)
		})
	}
}

// textStatuses are the status values of a mapped plan table with a text
// status column.
var textStatuses = store.Statuses{Pending: store.StatusValues{"pending"}, InFlight: "delivering", Delivered: "delivered", Dead: "dead"}

// mappedPlanTable makes and maps a table named after prefix of 30,000
// pending rows whose status column is of type typ, dropped when the test
// ends.
func mappedPlanTable(ctx context.Context, t *testing.T, s *Store, prefix, typ string, statuses store.Statuses) string {
	t.Helper()
	table := testenv.Name(prefix)
	t.Cleanup(func() { _, _ = s.DB().Exec(`DROP TABLE IF EXISTS "` + table + `"`) })
	for _, q := range []string{
		`CREATE TABLE "` + table + `" (event_id VARCHAR(64) PRIMARY KEY, event_type VARCHAR(64) NOT NULL,
  payload_json TEXT NOT NULL, status ` + typ + `, next_retry_at_ms BIGINT NOT NULL DEFAULT 0,
  lock_until_ms BIGINT NOT NULL DEFAULT 0, worker_id VARCHAR(128) NOT NULL DEFAULT '')`,
		`CREATE INDEX ON "` + table + `" (status, next_retry_at_ms)`,
		`INSERT INTO "` + table + `" (event_id, event_type, payload_json) SELECT md5(g::text), 'T', repeat('a', 200)
  FROM generate_series(1, 30000) g`,
	} {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.MapTable(table, store.Mapping{
		Columns: store.Columns{ID: "event_id", Type: "event_type", Payload: "payload_json", Status: "status",
			NextAttempt: "next_retry_at_ms", LeaseUntil: "lock_until_ms", LeaseOwner: "worker_id"},
		Statuses: statuses, TimeUnit: store.TimeEpochMillis,
	}); err != nil {
		t.Fatal(err)
	}
	return table
}

// checkMappedMarks claims three batches of 100 and checks each one's mark:
// its plan, then that it marks all 100 delivered.
func checkMappedMarks(ctx context.Context, t *testing.T, s *Store, table, delivered string) {
	t.Helper()
	tab := s.mapped.Get(table)
	for token := int64(1); token <= 3; token++ {
		recs, err := tab.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: token,
			Lease: time.Minute, Limit: 100})
		if err != nil || len(recs) != 100 {
			t.Fatalf("claim %d: %d records, %v", token, len(recs), err)
		}
		ds := make([]store.Delivery, len(recs))
		ids := make([]int64, len(recs))
		for i, r := range recs {
			ds[i], ids[i] = store.Delivery{ID: r.ID}, r.ID
		}
		f := store.Fence{Table: table, Token: token}
		q, args := tab.CompleteStatement(f, ids)
		plan := scans(planOf(t, s.DB(), q, args))
		if !strings.Contains(plan, "_pkey") || strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "status_next_retry") {
			t.Errorf("mark of claim %d does not find its rows by the primary key alone; its scans:\n%s", token, plan)
		}
		if lost, err := tab.Complete(ctx, f, ds); err != nil || len(lost) > 0 {
			t.Fatalf("mark of claim %d: %d lost, %v", token, len(lost), err)
		}
	}
	var n int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM "`+table+`" WHERE status::text = $1`, delivered).Scan(&n); err != nil || n != 300 {
		t.Fatalf("%d rows delivered, want 300 (%v)", n, err)
	}
}

// scans keeps a plan's scan lines (the table's and its CTE's), cut short:
// a mark's filter lists every id it marks.
func scans(plan string) string {
	var b strings.Builder
	for _, line := range strings.Split(plan, "\n") {
		if strings.Contains(line, "Scan") {
			b.WriteString(line[:min(len(line), 160)] + "\n")
		}
	}
	return b.String()
}
