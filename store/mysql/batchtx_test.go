package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
)

// TestFailedClaimEndsItsTransaction makes a claim fail after its BEGIN went
// out (the table is gone): the connection must come back to the claims'
// pool outside any transaction, and the next claim must work.
func TestFailedClaimEndsItsTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := mysql.Open(ctx, testenv.MySQLDSN(), mysql.Options{MaxOpenConns: 1})
	if err != nil {
		testenv.Unreachable(t, "MySQL/MariaDB", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	claim := func(table string) error {
		_, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: 1,
			Lease: time.Minute, Limit: 10})
		return err
	}
	if err := claim("herald_no_such_table"); err == nil {
		t.Fatal("a claim from a missing table succeeded")
	}
	var inTx int
	err = s.MultiPool().QueryRowContext(ctx, "SELECT @@in_transaction").Scan(&inTx)
	if err != nil {
		t.Skipf("the server has no @@in_transaction (MySQL): %v", err)
	}
	if inTx != 0 {
		t.Fatal("the failed claim left its connection inside a transaction")
	}
	_, table := open(t)
	if err := claim(table); err != nil {
		t.Fatalf("a claim after a failed one: %v", err)
	}
}
