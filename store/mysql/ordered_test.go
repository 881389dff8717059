package mysql_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// TestOrderedLockedHeadBlocksKey holds a row lock on the head of key "a",
// as a worker in the middle of its claim transaction would. SKIP LOCKED
// passes over that row, but the later row of "a" must not be claimed
// (it would be published before its predecessor); key "b" must be.
func TestOrderedLockedHeadBlocksKey(t *testing.T) {
	s, table := open(t)
	ctx := context.Background()
	ev := func(key string) herald.Event {
		return herald.Event{Topic: "t", Type: "K", PartitionKey: key, Payload: []byte("x")}
	}
	enqueue(t, s, table, ev("a"), ev("a"), ev("b"))
	var headA int64
	if err := s.DB().QueryRow("SELECT MIN(id) FROM `" + table + "` WHERE partition_key = 'a'").Scan(&headA); err != nil {
		t.Fatal(err)
	}
	tx, err := s.DB().BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // rolled back below; this is for early exits
	if _, err := tx.Exec("SELECT id FROM `"+table+"` WHERE id = ? FOR UPDATE", headA); err != nil {
		t.Fatal(err)
	}
	p := store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: 1, Lease: time.Minute, Limit: 10, Ordered: true}
	recs, err := s.Claim(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Event.PartitionKey != "b" {
		t.Fatalf("with a's head locked by another transaction, claimed %d rows %v; want only b's", len(recs), keysOf(recs))
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	p.Token = 2
	recs, err = s.Claim(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].ID != headA || recs[1].Event.PartitionKey != "a" {
		t.Fatalf("after the lock is gone, claimed %v; want both rows of a, head first", keysOf(recs))
	}
}

func keysOf(recs []store.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Event.PartitionKey
	}
	return out
}
