package mysql

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// TestAdoptMappedMarkPlan: a mapped table's mark finds its rows by the
// primary key, forced, whatever the table's time unit (before, only where
// claims used cursors: epoch_ms times), and marks them. The table is
// analyzed while every row is pending, as a queue's usual statistics are.
func TestAdoptMappedMarkPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, testenv.MySQLDSN(), Options{})
	if err != nil {
		testenv.Unreachable(t, "MySQL/MariaDB", err)
	}
	defer s.Close()
	for _, unit := range []store.TimeUnit{store.TimeDatetime, store.TimeEpochMillis} {
		t.Run(string(unit), func(t *testing.T) {
			table := testenv.Name("herald_mmark")
			t.Cleanup(func() { _, _ = s.DB().Exec("DROP TABLE IF EXISTS `" + table + "`") })
			mapMarkTable(ctx, t, s, table, unit)
			tab := s.Mapped(table)
			for token := int64(1); token <= 3; token++ {
				recs, err := tab.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: token,
					Lease: time.Minute, Limit: 100})
				if err != nil || len(recs) != 100 {
					t.Fatalf("claim %d: %d records, %v", token, len(recs), err)
				}
				ds, ids := make([]store.Delivery, len(recs)), make([]int64, len(recs))
				for i, r := range recs {
					ds[i], ids[i] = store.Delivery{ID: r.ID}, r.ID
				}
				f := store.Fence{Table: table, Token: token}
				q, args := tab.CompleteStatement(f, ids)
				if plan := explainRows(t, s.DB(), q, args); len(plan) != 1 || plan[0].key != "PRIMARY" {
					t.Errorf("mark of claim %d: plan %+v, want the primary key alone", token, plan)
				}
				if lost, err := tab.Complete(ctx, f, ds); err != nil || len(lost) > 0 {
					t.Fatalf("mark of claim %d: %d lost, %v", token, len(lost), err)
				}
			}
			var n int
			if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM `"+table+"` WHERE status = 'delivered'").Scan(&n); err != nil || n != 300 {
				t.Fatalf("%d rows delivered, want 300 (%v)", n, err)
			}
		})
	}
}

// mapMarkTable makes and maps a table of 3,000 pending rows whose times
// are in unit, analyzed.
func mapMarkTable(ctx context.Context, t *testing.T, s *Store, table string, unit store.TimeUnit) {
	t.Helper()
	typ, zero := "BIGINT", "0"
	if unit == store.TimeDatetime {
		typ, zero = "DATETIME(3)", "'1970-01-01 00:00:01'"
	}
	for _, q := range []string{
		"CREATE TABLE `" + table + "` (event_id VARCHAR(64) PRIMARY KEY, event_type VARCHAR(64) NOT NULL," +
			" payload_json TEXT NOT NULL, status VARCHAR(16) NOT NULL DEFAULT 'pending', next_retry_at " + typ + " NOT NULL DEFAULT " + zero + "," +
			" lock_until " + typ + " NOT NULL DEFAULT " + zero + ", worker_id VARCHAR(128) NOT NULL DEFAULT ''," +
			" KEY due (status, next_retry_at))",
		"INSERT INTO `" + table + "` (event_id, event_type, payload_json) VALUES " + strings.Repeat("(UUID(), 'T', REPEAT('a', 200)), ", 2999) +
			"(UUID(), 'T', REPEAT('a', 200))",
		"ANALYZE TABLE `" + table + "`",
	} {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(fmt.Errorf("%s: %w", q[:30], err))
		}
	}
	if err := s.MapTable(table, store.Mapping{
		Columns: store.Columns{ID: "event_id", Type: "event_type", Payload: "payload_json", Status: "status",
			NextAttempt: "next_retry_at", LeaseUntil: "lock_until", LeaseOwner: "worker_id"},
		Statuses: store.Statuses{Pending: store.StatusValues{"pending"}, InFlight: "delivering", Delivered: "delivered", Dead: "dead"},
		TimeUnit: unit,
	}); err != nil {
		t.Fatal(err)
	}
}
