package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
)

// TestBoundSettings: the claim's and the mark's first statement bound their
// transaction (idle and lock waits) and leave the session as it was.
func TestBoundSettings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Open(ctx, testenv.PostgresDSN(), Options{MaxOpenConns: 1})
	if err != nil {
		testenv.Unreachable(t, "PostgreSQL", err)
	}
	defer s.Close()
	db := s.DB()
	for name, q := range map[string]string{"claim": planSettings, "mark": asyncCommit} {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(q, boundArg(1500*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"idle_in_transaction_session_timeout", "lock_timeout"} {
			var got string
			if err := tx.QueryRow("SHOW " + v).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != "1500ms" {
				t.Errorf("%s: %s is %s in the transaction, want 1500ms", name, v, got)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		var after string // the pool's one connection, after the transaction
		if err := db.QueryRow("SHOW idle_in_transaction_session_timeout").Scan(&after); err != nil || after != "0" {
			t.Errorf("%s: idle_in_transaction_session_timeout is %q (%v) after the transaction, want 0", name, after, err)
		}
	}
}
