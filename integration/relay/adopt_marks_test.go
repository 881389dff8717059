package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/store"
)

// Rule: a mark of a batch in which a later claim retook some rows (their
// lease ran out) changes the rows still held, leaves the retaken ones to
// the later claim and reports exactly those lost: for a delivery (one
// UPDATE for the batch) and a discard (one DELETE).
func TestAdoptBatchMarkLosesOnlyRetakenRows(t *testing.T) {
	for _, db := range adoptDBs {
		t.Run(db.name, func(t *testing.T) {
			for _, op := range []string{"complete", "discard"} {
				t.Run(op, func(t *testing.T) { testBatchMarkLoses(t, db, op) })
			}
		})
	}
}

func testBatchMarkLoses(t *testing.T, db adoptDB, op string) {
	w := newWallet(t, db)
	ctx := context.Background()
	if err := store.MapTable(w.store, w.table, walletMapping); err != nil {
		t.Fatal(err)
	}
	w.insert("part", "WalletGiftDebited", walletUsers, 4)
	claim := func(token int64, limit int, lease time.Duration) []store.Record {
		var recs []store.Record
		waitFor(t, 10*time.Second, fmt.Sprintf("claim %d", token), func() bool {
			var err error
			recs, err = w.store.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: w.table}, Owner: "node/wallet-01",
				Token: token, Lease: lease, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			return len(recs) == limit
		})
		return recs
	}
	first := claim(101, 4, 40*time.Millisecond)
	retaken := claim(202, 2, time.Hour) // two of the four, once the first lease ran out
	retakenIDs := map[string]bool{}
	for _, r := range retaken {
		retakenIDs[r.Event.ID] = true
	}
	var want []int64
	ids := make([]int64, len(first))
	for i, r := range first {
		ids[i] = r.ID
		if retakenIDs[r.Event.ID] {
			want = append(want, r.ID)
		}
	}
	f := store.Fence{Table: w.table, Token: 101}
	var lost []int64
	var err error
	if op == "complete" {
		ds := make([]store.Delivery, len(ids))
		for i, id := range ids {
			ds[i] = store.Delivery{ID: id}
		}
		lost, err = w.store.Complete(ctx, f, ds)
	} else {
		lost, err = w.store.Discard(ctx, f, ids)
	}
	slices.Sort(want)
	if err != nil || !slices.Equal(lost, want) {
		t.Fatalf("%s of the stale batch: lost %v, %v; want %v (the retaken rows)", op, lost, err, want)
	}
	rows := w.rows()
	for _, r := range first {
		got, present := rows[r.Event.ID]
		switch {
		case retakenIDs[r.Event.ID] && (!present || got.status != "delivering"):
			t.Errorf("retaken row %s is %+v (present %v), want still delivering under the later claim", r.Event.ID, got, present)
		case !retakenIDs[r.Event.ID] && op == "complete" && got.status != "delivered":
			t.Errorf("held row %s is %+v, want delivered", r.Event.ID, got)
		case !retakenIDs[r.Event.ID] && op == "discard" && present:
			t.Errorf("held row %s is still there (%+v), want deleted", r.Event.ID, got)
		}
	}
}

// Rule: without a fence column, a claim whose owner (worker id and token)
// does not fit the lease owner column is refused as a table problem
// naming the column and the width needed (ErrSchema), not written cut or
// failed as a database error; a wide enough column claims as before.
func TestAdoptNarrowOwnerColumn(t *testing.T) {
	for _, db := range adoptDBs {
		if db.name == "SQLite" {
			continue // TEXT has no width on SQLite
		}
		t.Run(db.name, func(t *testing.T) {
			ddl := slices.Clone(db.ddl)
			ddl[0] = strings.Replace(strings.Replace(ddl[0], "worker_id VARCHAR(128)", "worker_id VARCHAR(20)", 1),
				"worker_id TEXT", "worker_id VARCHAR(20)", 1)
			w := newWalletDDL(t, db, ddl)
			ctx := context.Background()
			if err := store.MapTable(w.store, w.table, walletMapping); err != nil {
				t.Fatal(err)
			}
			w.insert("narrow", "WalletGiftDebited", walletUsers, 1)
			claim := func(owner string) error {
				_, err := w.store.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: w.table}, Owner: owner,
					Token: 1 << 40, Lease: time.Minute, Limit: 10})
				return err
			}
			err := claim("node-12345/wallet-01")
			if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), "worker_id holds 20 characters") {
				t.Fatalf("claim with a long owner: %v; want a schema error naming worker_id and its width", err)
			}
			if r := w.rows()["narrow-0000"]; r.status != "pending" {
				t.Fatalf("the refused claim changed the row: %+v", r)
			}
			if err := claim("n/w"); err != nil {
				t.Fatalf("claim with an owner that fits: %v", err)
			}
		})
	}
}

// Rule: an idle lane on a mapped table sees a row the service inserts (no
// wakeup of any kind) by peeking, long before its poll_interval: here the
// poll is 30 s, the lane idle for 4.2 s, and the row must be delivered
// within 1.5 s, on each database. (Claims alone, backing off 1, 2, 4, …
// ms, would look next at 8.2 s.)
func TestAdoptIdleLaneSeesServiceInserts(t *testing.T) {
	for _, db := range adoptDBs {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			w := newWallet(t, db)
			l := w.lane(memory.New(memory.Config{}))
			l.PollInterval = 30 * time.Second
			w.runRelay(l)
			time.Sleep(4200 * time.Millisecond) // idle, its claims backed off
			w.insert("late", "WalletGiftDebited", walletUsers, 1)
			waitFor(t, 1500*time.Millisecond, "the inserted row delivered", func() bool { return w.countStatus("delivered") == 1 })
		})
	}
}

// Rule: on PostgreSQL a mapped claim and a batch mark commit without
// waiting for their WAL flush (they carry synchronous_commit off) for
// their own transaction only: the session they ran on keeps its setting,
// so the service's writes on a shared pool stay as durable as it set them.
func TestAdoptClaimKeepsSessionSettings(t *testing.T) {
	db := adoptDBs[slices.IndexFunc(adoptDBs, func(d adoptDB) bool { return d.name == "PostgreSQL" })]
	w := newWallet(t, db)
	ctx := context.Background()
	if err := store.MapTable(w.store, w.table, walletMapping); err != nil {
		t.Fatal(err)
	}
	w.insert("sync", "WalletGiftDebited", walletUsers, 3)
	pool := w.store.DB()
	pool.SetMaxOpenConns(1) // every statement below on one session
	setting := func() string {
		var v string
		if err := pool.QueryRow("SELECT current_setting('synchronous_commit')").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := setting()
	if before == "off" {
		t.Skip("the server's own default is synchronous_commit off: nothing to tell apart")
	}
	recs, err := w.store.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: w.table}, Owner: "node/wallet-01",
		Token: 7, Lease: time.Minute, Limit: 3})
	if err != nil || len(recs) != 3 {
		t.Fatalf("claim: %d rows, %v; want 3", len(recs), err)
	}
	if got := setting(); got != before {
		t.Fatalf("after a claim the session's synchronous_commit is %q, want %q", got, before)
	}
	ds := make([]store.Delivery, len(recs))
	for i, r := range recs {
		ds[i] = store.Delivery{ID: r.ID}
	}
	if lost, err := w.store.Complete(ctx, store.Fence{Table: w.table, Token: 7}, ds); err != nil || len(lost) > 0 {
		t.Fatalf("complete: lost %v, %v", lost, err)
	}
	if got := setting(); got != before {
		t.Fatalf("after a mark the session's synchronous_commit is %q, want %q", got, before)
	}
	for id, r := range w.rows() {
		if r.status != "delivered" {
			t.Errorf("row %s is %+v, want delivered", id, r)
		}
	}
}
