package mysql_test

import (
	"context"
	"testing"

	"github.com/heraldhq/herald"
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
	dbtest.CheckDocRows(t, s, table, plainID)
}
