package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/dbtest"
	"github.com/heraldhq/herald/store/mysql"
)

// rowState is what the upgrade must keep of a row: every column that
// changes over its life, as text.
type rowState struct{ status, attempts, lastError, owner, token, receipt, availableAt, deliveredAt string }

// TestUpgradeToReadyColumns builds a version-1 table holding rows in every
// state (pending, delayed, retryable, claimed, delivered, dead; of a named
// tenant and with a partition key too), upgrades it to the latest version
// while plain-SQL inserts go on, and checks that every row is unchanged and
// that the relay's operations work on them: the claimed row completes
// under its fencing token, tenant and ordered claims (the rebuilt indexes)
// find the ready rows and skip the others, dead rows list.
func TestUpgradeToReadyColumns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := openStore(t)
	table := testenv.Name("herald_up")
	defer dbtest.Drop(s, table)
	if err := s.MigrateTo(ctx, table, 1); err != nil {
		t.Fatal(err)
	}
	q := "`" + table + "`"
	insert := func(id, tenant, key, delay string) {
		t.Helper()
		if _, err := s.DB().ExecContext(ctx, "INSERT INTO "+q+` (event_id, tenant, partition_key, topic, event_type, payload, available_at)
VALUES (?, ?, ?, 'orders', 'OrderPlaced', '{}', UTC_TIMESTAMP(6) + INTERVAL `+delay+`)`, id, tenant, key); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"claimed", "delivered", "retryable", "dead"} {
		insert(id, "", "", "-1 SECOND")
	}
	recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w1", Token: 11,
		Lease: time.Hour, Limit: 4})
	if err != nil || len(recs) != 4 {
		t.Fatalf("claim on version 1: %d rows, %v", len(recs), err)
	}
	byName := map[string]int64{}
	for _, r := range recs {
		byName[r.Event.ID] = r.ID
	}
	f := store.Fence{Table: table, Token: 11}
	mustNone := func(lost []int64, err error) {
		t.Helper()
		if err != nil || len(lost) != 0 {
			t.Fatalf("lost %v, %v", lost, err)
		}
	}
	mustNone(s.Complete(ctx, f, []store.Delivery{{ID: byName["delivered"], Receipt: store.Receipt{Stream: "S", Sequence: 7}}}))
	mustNone(s.Retry(ctx, f, []store.Failure{{ID: byName["retryable"], Error: "broker said no"}}))
	mustNone(s.Kill(ctx, f, []store.Failure{{ID: byName["dead"], Error: "permanent"}}))
	insert("pending", "", "", "-1 SECOND")
	insert("delayed", "", "", "1 HOUR")
	insert("tenant", "t1", "", "-1 SECOND")
	insert("keyed", "", "k1", "-1 SECOND")
	insert("keyed-delayed", "", "k2", "1 HOUR")
	insert("keyed-after", "", "k2", "-1 SECOND")
	before := snapshot(t, s.DB(), q)

	// Producers keep inserting while the table is upgraded in place.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var live []string
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("live-%d", i)
			if _, err := s.DB().ExecContext(ctx, "INSERT INTO "+q+" (event_id, topic, event_type, payload, available_at)"+
				" VALUES (?, 'orders', 'OrderPlaced', '{}', UTC_TIMESTAMP(6) + INTERVAL 1 HOUR)", id); err != nil {
				t.Errorf("insert during the upgrade: %v", err)
				return
			}
			live = append(live, id)
		}
	})
	err = s.Migrate(ctx, table)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	after := snapshot(t, s.DB(), q)
	for id, was := range before {
		if now := after[id]; now != was {
			t.Errorf("row %s: %+v before the upgrade, %+v after", id, was, now)
		}
	}
	for _, id := range live {
		if _, ok := after[id]; !ok {
			t.Errorf("row %s inserted during the upgrade is missing", id)
		}
	}
	t.Logf("%d rows inserted during the upgrade", len(live))
	checkUpgradedOperations(ctx, t, s, table, byName["claimed"])
	// A crash after the ALTERs but before the version was recorded: the
	// next Migrate runs version 2 again on a table that has its columns.
	if _, err := s.DB().ExecContext(ctx, "DELETE FROM herald_migrations WHERE table_name = ? AND version = 2", table); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx, table); err != nil {
		t.Errorf("upgrade again after a crash before its record: %v", err)
	}
}

// checkUpgradedOperations runs the relay's operations on the upgraded
// table of TestUpgradeToReadyColumns.
func checkUpgradedOperations(ctx context.Context, t *testing.T, s *mysql.Store, table string, claimedID int64) {
	t.Helper()
	if lost, err := s.Complete(ctx, store.Fence{Table: table, Token: 12}, []store.Delivery{{ID: claimedID}}); err != nil || len(lost) != 1 {
		t.Errorf("complete under a stale token after the upgrade: lost %v, %v; want the row lost", lost, err)
	}
	if lost, err := s.Complete(ctx, store.Fence{Table: table, Token: 11}, []store.Delivery{{ID: claimedID}}); err != nil || len(lost) != 0 {
		t.Errorf("complete of the row claimed before the upgrade: lost %v, %v", lost, err)
	}
	claimIDs := func(p store.ClaimParams) []string {
		t.Helper()
		p.Table, p.Owner, p.Lease, p.Limit = table, "w2", time.Minute, 100
		recs, err := s.Claim(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range recs {
			ids = append(ids, r.Event.ID)
		}
		slices.Sort(ids)
		return ids
	}
	if got := claimIDs(store.ClaimParams{Scope: store.Scope{Tenant: "t1"}, Token: 21}); !slices.Equal(got, []string{"tenant"}) {
		t.Errorf("tenant claim after the upgrade: %v, want [tenant]", got)
	}
	// keyed-after waits behind keyed-delayed, its key's earlier row.
	want := []string{"keyed", "pending", "retryable"}
	if got := claimIDs(store.ClaimParams{Ordered: true, Token: 22}); !slices.Equal(got, want) {
		t.Errorf("ordered claim after the upgrade: %v, want %v", got, want)
	}
	dead, err := s.List(ctx, store.ListParams{Scope: store.Scope{Table: table}, Status: store.StatusDead, Limit: 10})
	if err != nil || len(dead) != 1 || dead[0].Event.ID != "dead" || dead[0].LastError != "permanent" {
		t.Errorf("dead rows after the upgrade: %+v, %v", dead, err)
	}
}

// snapshot reads every row's state by event id.
func snapshot(t *testing.T, db *sql.DB, q string) map[string]rowState {
	t.Helper()
	rows, err := db.Query("SELECT event_id, status, attempts, last_error, lease_owner, lease_token, COALESCE(receipt, 'NULL')," +
		" available_at, COALESCE(delivered_at, 'NULL') FROM " + q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]rowState{}
	for rows.Next() {
		var id string
		var r rowState
		if err := rows.Scan(&id, &r.status, &r.attempts, &r.lastError, &r.owner, &r.token, &r.receipt, &r.availableAt, &r.deliveredAt); err != nil {
			t.Fatal(err)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
