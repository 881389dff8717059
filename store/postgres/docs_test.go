package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store/internal/dbtest"
)

// TestDocsSQL runs the statements of docs/sql.md's PostgreSQL section
// through the driver, without the Herald API, in one transaction (the
// NOTIFY goes with it), and checks what they wrote and that relays woke.
func TestDocsSQL(t *testing.T) {
	s, table := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	wake, err := s.Wakeups(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		for range wake { //nolint:revive // wait for the listener to stop
		}
	}()
	blocks := dbtest.DocSQL(t, "PostgreSQL", table)
	if len(blocks) != 3 {
		t.Fatalf("docs/sql.md PostgreSQL plain INSERT part has %d sql blocks, want 3", len(blocks))
	}
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	plainID := herald.NewID()
	if _, err := tx.ExecContext(ctx, blocks[0], plainID, "orders", "OrderPlaced", []byte("{}")); err != nil {
		t.Fatalf("the plain INSERT: %v", err)
	}
	for range 2 { // the second run checks the idempotence clause
		if _, err := tx.ExecContext(ctx, blocks[1]); err != nil {
			t.Fatalf("the full INSERT: %v", err)
		}
	}
	if _, err := tx.ExecContext(ctx, blocks[2]); err != nil {
		t.Fatalf("the NOTIFY: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	waitWakeup(t, wake, 5*time.Second, "after the documented NOTIFY")
	dbtest.CheckDocRows(t, s, table, plainID)
}
