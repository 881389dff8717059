package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store/internal/dbtest"
)

// TestExpiredLookLocksNoPendingRow: a claim's look for expired leases
// locks only the rows it takes. A locking range read of the in-flight
// part of the claim index also locked the entry past its end, the oldest
// pending row's; a claim through another index (ordered, tenant) that took
// that row then deadlocked with this one at commit, and a claim committed
// in the background lost rows it was already publishing.
func TestExpiredLookLocksNoPendingRow(t *testing.T) {
	s, table := open(t)
	for range 3 {
		dbtest.Enqueue(t, s, table, herald.Event{Topic: "t", Type: "Pending", Payload: []byte(`{}`)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := dbtest.Quote(s, table)
	err := s.LookForExpiredThen(ctx, table, func() error {
		conn, err := s.DB().Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
			return err
		}
		// What a claim's UPDATE does to the row's claim index entry.
		_, err = conn.ExecContext(ctx, "UPDATE "+q+" SET status = 'in_flight', available_at = UTC_TIMESTAMP(6) "+
			"WHERE id = (SELECT id FROM (SELECT MIN(id) AS id FROM "+q+") m)")
		return err
	})
	if err != nil {
		t.Fatalf("moving the oldest pending row while a claim looked for expired leases: %v", err)
	}
}
