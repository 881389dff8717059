package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/store"
)

// Rule: search and replay by query work on a mapped table through its
// mapping: a query selects rows by state, type, tenant, key, event id and
// creation time (created_at in the table's time unit), pages in event id
// order both ways, and a replay puts only the selected delivered or dead
// rows back to the first pending value, due at once, attempts at 0, in
// batches that continue after the last row of the previous one; each
// replay is in the event's history, and the relay publishes each replayed
// row again. Where the table maps a receipt column each replay gets a
// dedupe id of its own (EVENT_ID/replay-N, N counting on from the
// receipt); without one the event id stays the dedupe id.
func TestAdoptReplayByQuery(t *testing.T) {
	for _, db := range adoptDBs {
		for _, receipt := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/receipt=%v", db.name, receipt), func(t *testing.T) { testAdoptReplayByQuery(t, db, receipt) })
		}
	}
}

func testAdoptReplayByQuery(t *testing.T, db adoptDB, receipt bool) {
	w := newWallet(t, db)
	ctx := context.Background()
	m := walletMapping
	if receipt {
		if _, err := w.store.DB().Exec(w.q(`ALTER TABLE {{T}} ADD receipt_json VARCHAR(512) NULL`)); err != nil {
			t.Fatal(err)
		}
		m.Columns.Receipt = "receipt_json"
	}
	if err := store.MapTable(w.store, w.table, m); err != nil {
		t.Fatal(err)
	}
	if err := w.store.Migrate(ctx, w.table); err != nil {
		t.Fatal(err)
	}
	gifts := w.insert("gift", "WalletGiftDebited", walletUsers, 12)
	frozen := w.insert("frz", "WalletFrozen", 2000, 4)
	poison := w.insert("poison", "WalletPoison", 3000, 2)
	pub := memory.New(memory.Config{})
	for _, id := range poison {
		pub.FailEvent(id, 1, herald.Permanent(errors.New("rejected once")))
	}
	lane := w.lane(pub)
	lane.Columns, lane.Statuses = m.Columns, m.Statuses
	r := w.runRelay(lane)
	defer r.stop()
	waitFor(t, 60*time.Second, "the first publication settled", func() bool {
		return w.countStatus("delivered") == len(gifts)+len(frozen) && w.countStatus("dead") == len(poison)
	})
	rep := w.store.Replays()
	scope := store.Scope{Table: w.table}
	checkMappedSearch(t, rep, scope, gifts, frozen)

	// The gifts of one key, and every dead row, in batches of 2.
	key := fmt.Sprint(walletUsers + 3)
	var gk []string
	for i, id := range gifts {
		if i%7 == 3 {
			gk = append(gk, id)
		}
	}
	got := replayAll(t, rep, store.EventQuery{Scope: scope, Statuses: []store.Status{store.StatusDelivered},
		Types: []string{"WalletGiftDebited"}, Keys: []string{key}})
	got = append(got, replayAll(t, rep, store.EventQuery{Scope: scope, Statuses: []store.Status{store.StatusDead}})...)
	want := append(slices.Clone(gk), poison...)
	if !slices.Equal(got, want) {
		t.Fatalf("replayed %v, want %v", got, want)
	}
	waitFor(t, 30*time.Second, "every replayed row published again", func() bool {
		for _, id := range want {
			if n := pub.Count(id); n != 2 && !slices.Contains(poison, id) || n != 1 && slices.Contains(poison, id) {
				return false // a poison row's first try failed: its replay is its first publication
			}
		}
		return w.countStatus("delivered") == len(gifts)+len(frozen)+len(poison)
	})
	// A second replay of one row counts on.
	if got := replayAll(t, rep, store.EventQuery{Scope: scope, Statuses: []store.Status{store.StatusDelivered}, EventIDs: gk[:1]}); len(got) != 1 {
		t.Fatalf("second replay of %s: %v", gk[0], got)
	}
	waitFor(t, 30*time.Second, "the second replay published", func() bool { return pub.Count(gk[0]) == 3 })
	checkReplayDedupe(t, pub, gk[0], receipt)
	for _, id := range append(append([]string{}, gifts...), frozen...) {
		if n, replayed := pub.Count(id), slices.Contains(gk, id); !replayed && n != 1 {
			t.Errorf("%s was not selected and published %d times, want once", id, n)
		}
	}
	hist, err := rep.ReplayHistory(ctx, w.table, gk[0])
	if err != nil || len(hist) != 2 || hist[0].From != store.StatusDelivered || hist[0].By != "tester" || hist[1].Reason != "test" {
		t.Errorf("history of %s = %+v, %v; want two replays from delivered by tester", gk[0], hist, err)
	}
	if hist, _ := rep.ReplayHistory(ctx, w.table, poison[0]); len(hist) != 1 || hist[0].From != store.StatusDead {
		t.Errorf("history of %s = %+v; want one replay from dead", poison[0], hist)
	}
}

// replayAll replays q in batches of 2, as admin.Replay does, and returns
// the replayed event ids in order.
func replayAll(t *testing.T, rep store.QueryReplayer, q store.EventQuery) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	var after int64
	for {
		refs, err := rep.ReplayNext(ctx, store.ReplayBatch{Query: q, AfterID: after, Limit: 2, By: "tester", Reason: "test"})
		if err != nil {
			t.Fatalf("replay %+v: %v", q, err)
		}
		if len(refs) > 0 {
			recs, err := rep.FindEvents(ctx, store.EventQuery{Scope: q.Scope, RowIDs: refs}, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs { // the relay may have taken them already
				if r.Status == store.StatusDead {
					t.Errorf("%s is still dead after its replay", r.Event.ID)
				}
				ids = append(ids, r.Event.ID)
			}
		}
		if len(refs) < 2 {
			return ids
		}
		after = refs[len(refs)-1]
	}
}

// checkMappedSearch checks the reads of search by query on the wallet
// table: filters, counts, and pages in both orders.
func checkMappedSearch(t *testing.T, rep store.QueryReplayer, scope store.Scope, gifts, frozen []string) {
	t.Helper()
	ctx := context.Background()
	count := func(q store.EventQuery) int64 {
		t.Helper()
		n, err := rep.CountEvents(ctx, q)
		if err != nil {
			t.Fatalf("count %+v: %v", q, err)
		}
		return n
	}
	hour := time.Hour
	for name, c := range map[string]struct {
		q    store.EventQuery
		want int
	}{
		"delivered":         {store.EventQuery{Statuses: []store.Status{store.StatusDelivered}}, len(gifts) + len(frozen)},
		"type":              {store.EventQuery{Types: []string{"WalletFrozen"}}, len(frozen)},
		"key":               {store.EventQuery{Keys: []string{fmt.Sprint(walletUsers)}}, 2},
		"event id":          {store.EventQuery{EventIDs: []string{gifts[0], frozen[1], "nope"}}, 2},
		"since an hour ago": {store.EventQuery{Since: time.Now().Add(-hour)}, len(gifts) + len(frozen) + 2},
		"until an hour ago": {store.EventQuery{Until: time.Now().Add(-hour)}, 0},
		"tenant":            {store.EventQuery{Scope: store.Scope{Tenant: "other"}}, 0},
	} {
		c.q.Scope.Table = scope.Table
		if got := count(c.q); got != int64(c.want) {
			t.Errorf("count %s = %d, want %d", name, got, c.want)
		}
	}
	all := append(slices.Clone(frozen), gifts...)
	slices.Sort(all)
	for _, newest := range []bool{false, true} {
		var seen []string
		var after int64
		for range 20 {
			recs, err := rep.FindEvents(ctx, store.EventQuery{Scope: scope, Statuses: []store.Status{store.StatusDelivered},
				NewestFirst: newest}, after, 5)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				seen = append(seen, r.Event.ID)
			}
			if len(recs) < 5 {
				break
			}
			after = recs[len(recs)-1].ID
		}
		want := slices.Clone(all)
		if newest {
			slices.Reverse(want)
		}
		if !slices.Equal(seen, want) {
			t.Errorf("pages (newest first: %v) = %v, want %v", newest, seen, want)
		}
	}
}

// checkReplayDedupe checks the dedupe ids of id's three publications:
// the event id, then EVENT_ID/replay-1 and -2 where the table keeps a
// receipt, the event id each time where it does not.
func checkReplayDedupe(t *testing.T, pub *memory.Publisher, id string, receipt bool) {
	t.Helper()
	var got []string
	for _, r := range pub.Records() {
		if r.Message.Event.ID == id {
			got = append(got, broker.DedupeID(r.Message))
		}
	}
	want := []string{id, id, id}
	if receipt {
		want = []string{id, id + "/replay-1", id + "/replay-2"}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("dedupe ids of %s = %v, want %v", id, got, want)
	}
}
