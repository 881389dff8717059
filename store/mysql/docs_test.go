package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/dbtest"
)

// TestDocsSQL runs the statements of docs/sql.md's MySQL section through
// the driver, without the Herald API, and checks what they wrote.
func TestDocsSQL(t *testing.T) {
	s, table := open(t)
	ctx := context.Background()
	blocks := dbtest.DocSQL(t, "MySQL and MariaDB", table)
	if len(blocks) != 2 {
		t.Fatalf("docs/sql.md MySQL plain INSERT part has %d sql blocks, want 2", len(blocks))
	}
	plainID := herald.NewID()
	if _, err := s.DB().ExecContext(ctx, blocks[0], plainID, "orders", "OrderPlaced", []byte("{}")); err != nil {
		t.Fatalf("the plain INSERT: %v", err)
	}
	for range 2 { // the second run checks the idempotence clause
		if _, err := s.DB().ExecContext(ctx, blocks[1]); err != nil {
			t.Fatalf("the full INSERT: %v", err)
		}
	}
	checkDocRows(t, s, table, plainID)
}

// checkDocRows checks the rows the docs' statements wrote: the plain one is
// claimable now, the full one carries its fields and is due in 30 s.
func checkDocRows(t *testing.T, s store.Store, table, plainID string) {
	t.Helper()
	ctx := context.Background()
	full, err := s.Get(ctx, table, "0190f5d2-6a7e-7c4e-9a1b-3f2d8e6c1a00")
	if err != nil {
		t.Fatal(err)
	}
	if full.Event.Tenant != "app1" || full.Event.PartitionKey != "user-42" || full.Event.Type != "WalletGiftDebited" ||
		full.Event.Headers["traceparent"] == "" || string(full.Event.Payload) != `{"gift_id":7,"count":1}` {
		t.Errorf("the full INSERT wrote %+v", full.Event)
	}
	if d := full.AvailableAt.Sub(full.Event.CreatedAt); d < 29*time.Second || d > 31*time.Second {
		t.Errorf("available_at is %v after created_at, want 30s (both UTC from the database clock)", d)
	}
	if age := time.Since(full.Event.CreatedAt); age < -time.Minute || age > time.Minute {
		t.Errorf("created_at %v is not now: a time zone is off", full.Event.CreatedAt)
	}
	recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: 1, Lease: time.Minute, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Event.ID != plainID {
		t.Errorf("claimed %d rows, want only the plain one (the other is delayed)", len(recs))
	}
	st, err := s.Stats(ctx, store.Scope{Table: table, Tenant: "app1"})
	if err != nil || st.Pending != 1 {
		t.Errorf("tenant app1 stats %+v, %v; want 1 pending", st, err)
	}
}
