package postgres

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// TestOutboxReadPlan: the outbox source's page read looks each row up in
// the projection's ledger by key, on fresh tables after a bulk load of
// 100,000 finished events, the ledger analyzed and the outbox not (as the
// benchmark's tables were). As NOT EXISTS, PostgreSQL chose the hashed
// alternative there: the whole ledger read for every page of 500; and the
// page's ids joined back to the outbox became a hash join over all of it.
func TestOutboxReadPlan(t *testing.T) {
	ctx, s := openForPlans(t)
	outbox, ledger := testenv.Name("herald_rplan"), testenv.Name("herald_rplan_pe")
	if err := s.Migrate(ctx, outbox); err != nil {
		t.Fatal(err)
	}
	defer s.Drop(ctx, outbox) //nolint:errcheck // cleanup
	if err := s.MigrateProjections(ctx, ledger); err != nil {
		t.Fatal(err)
	}
	defer s.DB().Exec(`DROP TABLE IF EXISTS "` + ledger + `"`) //nolint:errcheck // cleanup
	for _, q := range []string{
		`INSERT INTO "` + outbox + `" (event_id, topic, event_type, payload, status) SELECT 'e' || g, 't', 'T', '\x7b7d', 'delivered'
  FROM generate_series(1, 100000) g`,
		`INSERT INTO "` + ledger + `" (projection, tenant, event_id, state) SELECT 'p', '', 'e' || g, 'done' FROM generate_series(1, 100000) g`,
		`ANALYZE "` + ledger + `"`,
	} {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	q, args, err := s.projections.ReadOutboxQuery(store.OutboxScanParams{Scope: store.Scope{Table: outbox},
		ProjectionTable: ledger, Projection: "p", AfterID: 50000, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	plan := planOf(t, s.DB(), q, args)
	if strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "hashed") {
		t.Errorf("the page read scans the ledger whole; plan:\n%s", plan)
	}
}
