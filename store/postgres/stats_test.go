package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// Rule: an outbox scan analyzes a projection table whose planner statistics
// are stale (a fresh table filled faster than autovacuum looks), so that
// the scan's anti-join on it is planned as key lookups.
func TestOutboxScanAnalyzesAStaleProjectionTable(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	outbox, ledger := testenv.Name("scan_outbox"), testenv.Name("scan_ledger")
	if err := s.Migrate(ctx, outbox); err != nil {
		t.Fatal(err)
	}
	if err := s.MigrateProjections(ctx, ledger); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Drop(ctx, outbox)
		_, _ = s.DB().Exec(`DROP TABLE IF EXISTS "` + ledger + `"`)
	})
	if _, err := s.DB().Exec(`INSERT INTO "` + ledger + `" (projection, tenant, event_id, state)
SELECT 'p', '', 'e' || g, 'done' FROM generate_series(1, 3000) g`); err != nil {
		t.Fatal(err)
	}
	// The server counts the changes in its statistics a moment later.
	testenv.WaitFor(t, 30*time.Second, 50*time.Millisecond, "the server's count of the rows written", func() bool {
		var mods int64
		err := s.DB().QueryRow(`SELECT n_mod_since_analyze FROM pg_stat_user_tables WHERE relid = to_regclass($1)`,
			`"`+ledger+`"`).Scan(&mods)
		return err == nil && mods >= 3000
	})
	if _, err := s.ScanOutbox(ctx, store.OutboxScanParams{Scope: store.Scope{Table: outbox}, ProjectionTable: ledger,
		Projection: "p", Limit: 10}); err != nil {
		t.Fatal(err)
	}
	var analyzed bool
	if err := s.DB().QueryRow(`SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relid = to_regclass($1)`,
		`"`+ledger+`"`).Scan(&analyzed); err != nil {
		t.Fatal(err)
	}
	if !analyzed {
		t.Fatal("the scan left the projection table's statistics stale: 3,000 rows written, never analyzed")
	}
}
