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
	table := testenv.Name("herald_mplan")
	defer s.DB().Exec(`DROP TABLE IF EXISTS "` + table + `"`) //nolint:errcheck // cleanup
	for _, q := range []string{
		`CREATE TABLE "` + table + `" (event_id VARCHAR(64) PRIMARY KEY, event_type VARCHAR(64) NOT NULL,
  payload_json TEXT NOT NULL, status VARCHAR(16) NOT NULL DEFAULT 'pending', next_retry_at_ms BIGINT NOT NULL DEFAULT 0,
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
		Statuses: store.Statuses{Pending: store.StatusValues{"pending"}, InFlight: "delivering", Delivered: "delivered", Dead: "dead"},
		TimeUnit: store.TimeEpochMillis,
	}); err != nil {
		t.Fatal(err)
	}
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
