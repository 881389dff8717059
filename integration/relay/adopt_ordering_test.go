package relay

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/memory"
	. "github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// orderedWallet writes keys × perKey rows into the wallet table, keys
// interleaved, each row's created_at_ms one more than the last; event
// ids are shuffled so that their order is not the rows' order. It
// returns each id's place in its key's order.
func (w *wallet) orderedRows(keys, perKey int) map[string]int {
	w.t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	names := rng.Perm(keys * perKey)
	place := map[string]int{}
	for i := range perKey {
		for k := range keys {
			id := fmt.Sprintf("ev-%04d", names[i*keys+k])
			place[id] = i
			_, err := w.store.DB().Exec(w.q(`INSERT INTO {{T}} (app_code, event_id, event_type, transaction_id, command_id,
  user_id, asset_type, available_delta, frozen_delta, payload_json, created_at_ms, next_retry_at_ms)
VALUES ('voice', ?, 'WalletGiftDebited', 'tx', 'cmd', ?, 'GOLD', 0, 0, '{}', ?, 0)`), id, 5000+k, 1764900000000+int64(i*keys+k))
			if err != nil {
				w.t.Fatal(err)
			}
		}
	}
	return place
}

// Rule: with ordering: key a mapped lane publishes each key's rows in
// their created_at order (not their event ids'), while publishes fail at
// random and two relays of three workers each compete: a key's later row
// waits while an earlier one is in flight or backing off, as on Herald's
// own tables; every row is published once it is delivered.
func TestAdoptPerKeyOrder(t *testing.T) {
	for _, db := range adoptDBs {
		t.Run(db.name, func(t *testing.T) { testAdoptPerKeyOrder(t, db) })
	}
}

func testAdoptPerKeyOrder(t *testing.T, db adoptDB) {
	w := newWallet(t, db)
	if err := store.MapTable(w.store, w.table, walletMapping); err != nil {
		t.Fatal(err)
	}
	const keys, perKey = 8, 12
	place := w.orderedRows(keys, perKey)
	pub := memory.New(memory.Config{})
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	pub.SetHook(func(broker.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if rng.Float64() < 0.25 {
			return errors.New("injected failure")
		}
		return nil
	})
	l := w.lane(pub)
	l.Ordering, l.Concurrency, l.BatchSize = OrderingKey, 3, 20
	l.Retry = Retry{Initial: 2 * time.Millisecond, Max: 10 * time.Millisecond, MaxAttempts: 1000}
	l.Lease = 20 * time.Second // a lease that ran out would republish rows, rightly, which the check calls a reorder
	r1, r2 := w.runRelay(l), w.runRelay(l)
	defer r1.stop()
	defer r2.stop()
	for deadline := time.Now().Add(120 * time.Second); w.countStatus("delivered") != keys*perKey; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			left := map[string]row{}
			for id, r := range w.rows() {
				if r.status != "delivered" {
					left[id] = r
				}
			}
			t.Fatalf("rows not delivered after 2 minutes: %v", left)
		}
	}
	last := map[string]int{}
	for _, r := range pub.Records() {
		ev := r.Message.Event
		if prev, ok := last[ev.PartitionKey]; ok && place[ev.ID] <= prev {
			t.Fatalf("key %s: row %d (%s) published after row %d; per-key order broken", ev.PartitionKey, place[ev.ID], ev.ID, prev)
		}
		last[ev.PartitionKey] = place[ev.ID]
	}
	if len(last) != keys {
		t.Errorf("%d keys published, want %d", len(last), keys)
	}
}

// Rule: a fair lane on a mapped table shares its batches between the
// tenants of the tenant column: a tenant that wrote 3 rows after
// another's 600 gets them into the first batches (a plain lane publishes
// the other's first).
func TestAdoptFairTenants(t *testing.T) {
	for _, db := range adoptDBs {
		for _, fair := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fair=%v", db.name, fair), func(t *testing.T) { testAdoptFair(t, db, fair) })
		}
	}
}

func testAdoptFair(t *testing.T, db adoptDB, fair bool) {
	w := newWallet(t, db)
	if err := store.MapTable(w.store, w.table, walletMapping); err != nil {
		t.Fatal(err)
	}
	w.insert("big", "WalletGiftDebited", walletUsers, 600)
	small := w.insert("small", "WalletGiftDebited", 9000, 3)
	if _, err := w.store.DB().Exec(w.q(`UPDATE {{T}} SET app_code = 'small' WHERE event_type = 'WalletGiftDebited' AND user_id >= 9000`)); err != nil {
		t.Fatal(err)
	}
	pub := memory.New(memory.Config{})
	l := w.lane(pub)
	l.FairTenants, l.Concurrency, l.BatchSize = fair, 1, 50
	r := w.runRelay(l)
	defer r.stop()
	first := 2*50 + expressShare
	waitFor(t, 60*time.Second, "the first batches published", func() bool { return len(pub.Records()) >= first })
	n := 0
	for _, rec := range pub.Records()[:first] {
		if rec.Message.Event.Tenant == "small" {
			n++
		}
	}
	if want := map[bool]int{false: 0, true: len(small)}[fair]; n != want {
		t.Errorf("the first %d published hold %d of the small tenant's %d rows, want %d", first, n, len(small), want)
	}
}
