package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// everyUse is what a table read by ordered and tenant lanes is migrated for.
var everyUse = store.TableUse{Ordered: true, Tenants: true}

// TestUpgradeToReadyColumns upgrades a version-1 table (see testUpgrade).
func TestUpgradeToReadyColumns(t *testing.T) { testUpgrade(t, 1, everyUse) }

// TestUpgradeToFixedMarks upgrades a version-2 table (see testUpgrade).
func TestUpgradeToFixedMarks(t *testing.T) { testUpgrade(t, 2, everyUse) }

// TestUpgradeToFixedClaims upgrades a version-3 table (see testUpgrade),
// then checks that a row inserted after it is claimed at its stored size.
func TestUpgradeToFixedClaims(t *testing.T) { testUpgrade(t, 3, everyUse) }

// TestUpgradeToLaneIndexes upgrades a version-4 table for plain lanes
// only: version 5 drops the ordered and tenant indexes, ordered and
// tenant claims are refused naming what is missing (see testUpgrade), and
// MigrateFor then adds the indexes back while claims go on.
func TestUpgradeToLaneIndexes(t *testing.T) {
	s, table := testUpgrade(t, 4, store.TableUse{})
	addIndexesUnderClaims(t, s, table)
}

// TestUpgradeToLaneIndexesKeeping upgrades a version-4 table for ordered
// lanes: version 5 keeps their indexes and drops the tenant one.
func TestUpgradeToLaneIndexesKeeping(t *testing.T) {
	s, table := testUpgrade(t, 4, store.TableUse{Ordered: true})
	if got := indexes(t, s, table); !slices.Equal(got, []string{"PRIMARY", "claim", "event_id", "key_order", "ordered_claim"}) {
		t.Errorf("indexes after the upgrade for ordered lanes: %v", got)
	}
}

// testUpgrade builds a table at version from holding rows in every state
// (pending, delayed, retryable, claimed, delivered with a receipt, dead; of
// a named tenant and with a partition key too), upgrades it to the latest
// version while plain-SQL inserts go on, and checks that every row is
// unchanged and that the relay's operations work on them: the claimed row
// completes under its fencing token, tenant and ordered claims (the rebuilt
// indexes) find the ready rows and skip the others, dead rows list, the
// delivered row replays and is delivered again with its new time and
// receipt. The delivered row is marked as the build of its version did
// (version 3 moved receipt and delivered_at). The upgrade is MigrateFor
// use: claims that need an index use lacks must fail with
// store.ErrMissingIndex. It returns the store and the upgraded table.
func testUpgrade(t *testing.T, from int, use store.TableUse) (*mysql.Store, string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := openStore(t)
	table := testenv.Name("herald_up")
	t.Cleanup(func() { dbtest.Drop(s, table) })
	if err := s.MigrateTo(ctx, table, from); err != nil {
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
	if from >= 3 {
		mustNone(s.Complete(ctx, f, []store.Delivery{{ID: byName["delivered"], Receipt: store.Receipt{Stream: "S", Sequence: 7}}}))
	} else if _, err := s.DB().ExecContext(ctx, "UPDATE "+q+` SET status = 'delivered', delivered_at = UTC_TIMESTAMP(6),
  available_at = UTC_TIMESTAMP(6), receipt = '{"stream":"S","seq":7}' WHERE id = ? AND lease_token = 11`, byName["delivered"]); err != nil {
		t.Fatal(err)
	}
	// Failures are marked as the builds before version 6 did: without
	// attempt_errors, which this build's marks write.
	for id, mark := range map[string]string{"retryable": "status = 'pending', last_error = 'broker said no'",
		"dead": "status = 'dead', last_error = 'permanent'"} {
		if _, err := s.DB().ExecContext(ctx, "UPDATE "+q+" SET "+mark+", available_at = UTC_TIMESTAMP(6) WHERE id = ? AND lease_token = 11",
			byName[id]); err != nil {
			t.Fatal(err)
		}
	}
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
	err = s.MigrateFor(ctx, table, use)
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
	checkUpgradedOperations(ctx, t, s, table, byName["claimed"], use)
	checkRedelivery(ctx, t, s, table, before["delivered"])
	checkClaimKeepsSize(ctx, t, s, table)
	// A crash after the ALTERs but before the version was recorded: the
	// next Migrate runs the versions since from again on a table that has
	// their columns.
	if _, err := s.DB().ExecContext(ctx, "DELETE FROM herald_migrations WHERE table_name = ? AND version > ?", table, from); err != nil {
		t.Fatal(err)
	}
	if err := s.MigrateFor(ctx, table, use); err != nil {
		t.Errorf("upgrade again after a crash before its record: %v", err)
	}
	return s, table
}

// checkUpgradedOperations runs the relay's operations on the upgraded
// table of TestUpgradeToReadyColumns.
func checkUpgradedOperations(ctx context.Context, t *testing.T, s *mysql.Store, table string, claimedID int64, use store.TableUse) {
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
		if needs := (store.TableUse{Ordered: p.Ordered, Tenants: p.Tenant != ""}); needs.Union(use) != use {
			// A table migrated without the index this claim reads.
			if !errors.Is(err, store.ErrMissingIndex) {
				t.Errorf("claim for %s on a table migrated for %s: %d rows, %v; want store.ErrMissingIndex", needs, use, len(recs), err)
			}
			return nil
		}
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
	if got := claimIDs(store.ClaimParams{Scope: store.Scope{Tenant: "t1"}, Token: 21}); use.Tenants && !slices.Equal(got, []string{"tenant"}) {
		t.Errorf("tenant claim after the upgrade: %v, want [tenant]", got)
	}
	// keyed-after waits behind keyed-delayed, its key's earlier row.
	want := []string{"keyed", "pending", "retryable"}
	if !use.Tenants {
		want = append(want, "tenant") // the tenant claim above was refused
	}
	if got := claimIDs(store.ClaimParams{Ordered: true, Token: 22}); use.Ordered && !slices.Equal(got, want) {
		t.Errorf("ordered claim after the upgrade: %v, want %v", got, want)
	}
	dead, err := s.List(ctx, store.ListParams{Scope: store.Scope{Table: table}, Status: store.StatusDead, Limit: 10})
	if err != nil || len(dead) != 1 || dead[0].Event.ID != "dead" || dead[0].LastError != "permanent" {
		t.Errorf("dead rows after the upgrade: %+v, %v", dead, err)
	}
}

// checkRedelivery replays the row delivered before the upgrade (was: its
// state then), claims it and delivers it again, and checks that its
// delivery time and receipt are the new ones; then delivers a row with a
// receipt too long to pad, which is kept whole.
func checkRedelivery(ctx context.Context, t *testing.T, s *mysql.Store, table string, was rowState) {
	t.Helper()
	ids, err := s.Replays().ReplayNext(ctx, store.ReplayBatch{Query: store.EventQuery{Scope: store.Scope{Table: table},
		Statuses: []store.Status{store.StatusDelivered}, EventIDs: []string{"delivered"}}, Limit: 10, By: "test"})
	if err != nil || len(ids) != 1 {
		t.Fatalf("replay of the delivered row: %v, %v", ids, err)
	}
	if _, err := s.DB().ExecContext(ctx, "UPDATE `"+table+"` SET available_at = UTC_TIMESTAMP(6) + INTERVAL 1 HOUR WHERE id <> ? AND status = 'pending'", ids[0]); err != nil {
		t.Fatal(err)
	}
	long := store.Receipt{Stream: "S", Sequence: 8, MessageID: strings.Repeat("m", 80)}
	for i, rc := range []store.Receipt{{Stream: "S", Sequence: 8}, long} {
		recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w3", Token: int64(31 + i),
			Lease: time.Minute, Limit: 1})
		if err != nil || len(recs) != 1 {
			t.Fatalf("claim %d after the replay: %d rows, %v", i, len(recs), err)
		}
		if lost, err := s.Complete(ctx, store.Fence{Table: table, Token: int64(31 + i)},
			[]store.Delivery{{ID: recs[0].ID, Receipt: rc}}); err != nil || len(lost) != 0 {
			t.Fatalf("complete %d: lost %v, %v", i, lost, err)
		}
		got, err := s.Get(ctx, table, recs[0].Event.ID)
		switch {
		case err != nil:
			t.Fatal(err)
		case got.Status != store.StatusDelivered || got.Receipt != rc:
			t.Errorf("row %s delivered again: %s with receipt %+v, want %+v", got.Event.ID, got.Status, got.Receipt, rc)
		case i == 0 && !got.DeliveredAt.After(timeOf(t, was.deliveredAt)):
			t.Errorf("row delivered again: delivered_at %v, first delivery %s", got.DeliveredAt, was.deliveredAt)
		}
		if i > 0 {
			break
		}
		if _, err := s.DB().ExecContext(ctx, "INSERT INTO `"+table+"` (event_id, topic, event_type) VALUES ('long', 'orders', 'OrderPlaced')"); err != nil {
			t.Fatal(err)
		}
	}
}

// checkClaimKeepsSize inserts a row the way docs/sql.md does, claims it and
// checks that status and lease_owner kept the stored sizes they started
// with (version 4's defaults; the claim pads the owner), so the claim
// rewrote the row in place, and that Herald reads them without the padding.
func checkClaimKeepsSize(ctx context.Context, t *testing.T, s *mysql.Store, table string) {
	t.Helper()
	q := "`" + table + "`"
	if _, err := s.DB().ExecContext(ctx, "UPDATE "+q+" SET available_at = UTC_TIMESTAMP(6) + INTERVAL 1 HOUR WHERE status = 'pending'"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, "INSERT INTO "+q+" (event_id, topic, event_type) VALUES ('sized', 'orders', 'OrderPlaced')"); err != nil {
		t.Fatal(err)
	}
	sizes := func() (status, owner int) {
		t.Helper()
		if err := s.DB().QueryRowContext(ctx, "SELECT LENGTH(status), LENGTH(lease_owner) FROM "+q+" WHERE event_id = 'sized'").Scan(&status, &owner); err != nil {
			t.Fatal(err)
		}
		return status, owner
	}
	s0, o0 := sizes()
	recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "node-1/lane-01", Token: 41, Lease: time.Minute, Limit: 1})
	if err != nil || len(recs) != 1 || recs[0].Event.ID != "sized" {
		t.Fatalf("claim of the new row: %+v, %v", recs, err)
	}
	if s1, o1 := sizes(); s0 != 9 || o0 != mysql.OwnerWidth || s1 != s0 || o1 != o0 {
		t.Errorf("status and lease_owner sizes %d and %d before the claim, %d and %d after; want %d and %d throughout",
			s0, o0, s1, o1, 9, mysql.OwnerWidth)
	}
	got, err := s.Get(ctx, table, "sized")
	if err != nil || got.Status != store.StatusInFlight || got.LeaseOwner != "node-1/lane-01" {
		t.Errorf("claimed row read back: status %q, owner %q, %v", got.Status, got.LeaseOwner, err)
	}
	st, err := s.Stats(ctx, store.Scope{Table: table})
	if err != nil || st.InFlight == 0 {
		t.Errorf("stats after the claim: %+v, %v", st, err)
	}
}

func timeOf(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse("2006-01-02 15:04:05.999999", s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return tm
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

// TestUpgradeAfterPartialRename: a crash after version 3's first ALTER (the
// renames) but before the rest; the next Migrate finds the columns renamed
// and completes the upgrade.
func TestUpgradeAfterPartialRename(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	table := testenv.Name("herald_up3")
	defer dbtest.Drop(s, table)
	if err := s.MigrateTo(ctx, table, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, "ALTER TABLE `"+table+"` RENAME COLUMN receipt TO receipt_padded, "+
		"RENAME COLUMN delivered_at TO delivered_at_stored"); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx, table); err != nil {
		t.Fatalf("upgrade after a crash inside version 3: %v", err)
	}
	if cur, latest, err := s.SchemaVersion(ctx, table); err != nil || cur != latest {
		t.Fatalf("version %d of %d, %v", cur, latest, err)
	}
	var receipt, delivered sql.NullString
	if err := s.DB().QueryRowContext(ctx, "SELECT receipt, delivered_at FROM `"+table+"` LIMIT 1").Scan(&receipt, &delivered); !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("reading the virtual columns: %v", err)
	}
}

// TestMySQLUpgradeToAttemptErrors upgrades a version-5 table to version
// 6, which adds attempt_errors (see dbtest.UpgradeToAttemptErrors).
func TestMySQLUpgradeToAttemptErrors(t *testing.T) {
	dbtest.UpgradeToAttemptErrors(t, openStore(t), 6, true)
}
