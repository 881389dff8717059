package relay

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

// Rule: retention on a mapped table deletes, per state and in batches of
// the limit, the rows of its own status values that are older than that
// state's age: delivered and dead rows by lease_until (no delivered_at
// mapped), pending ones by created_at; younger rows and other states stay.
func TestAdoptMappedRetention(t *testing.T) {
	for _, db := range adoptDBs {
		t.Run(db.name, func(t *testing.T) {
			w := newWallet(t, db)
			if err := store.MapTable(w.store, w.table, walletMapping); err != nil {
				t.Fatal(err)
			}
			old, young := w.insert("old", "WalletGiftDebited", walletUsers, 6), w.insert("young", "WalletGiftDebited", walletUsers, 6)
			hourAgo := time.Now().Add(-time.Hour).UnixMilli()
			set := func(id, status string, lockMs, createdMs int64) {
				if _, err := w.store.DB().Exec(w.q(`UPDATE {{T}} SET status = ?, lock_until_ms = ?, created_at_ms = ? WHERE event_id = ?`),
					status, lockMs, createdMs, id); err != nil {
					t.Fatal(err)
				}
			}
			now := time.Now().UnixMilli()
			for i, status := range []string{"delivered", "delivered", "dead", "dead", "pending", "retryable"} {
				set(old[i], status, hourAgo, hourAgo)
				set(young[i], status, now+60_000, now)
			}
			set(young[0], "delivering", hourAgo, hourAgo) // in flight: never deleted
			p := store.CleanupParams{Scope: store.Scope{Table: w.table}, Delivered: time.Minute, Dead: time.Minute,
				Active: time.Minute, Limit: 1}
			n, err := w.store.Cleanup(context.Background(), p)
			if err != nil || n != 3 {
				t.Fatalf("[one per state per round] deleted %d, %v; want 3", n, err)
			}
			p.Limit = 10
			if n, err := w.store.Cleanup(context.Background(), p); err != nil || n != 3 {
				t.Fatalf("second round: deleted %d, %v; want the 3 old rows left", n, err)
			}
			rows := w.rows()
			for _, id := range old {
				if _, ok := rows[id]; ok {
					t.Errorf("[old rows deleted] %s (%s) is still there", id, rows[id].status)
				}
			}
			for _, id := range young {
				if _, ok := rows[id]; !ok {
					t.Errorf("[young rows kept] %s was deleted", id)
				}
			}
		})
	}
}
