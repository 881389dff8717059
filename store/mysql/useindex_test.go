package mysql_test

import (
	"context"
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

// indexes returns the names of table's indexes, sorted.
func indexes(t *testing.T, s *mysql.Store, table string) []string {
	t.Helper()
	rows, err := s.DB().Query(`SELECT DISTINCT index_name FROM information_schema.statistics
WHERE table_schema = DATABASE() AND table_name = ? ORDER BY index_name`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// plainIndexes are the indexes of a table only plain lanes read.
var plainIndexes = []string{"PRIMARY", "claim", "event_id"}

// TestMigrateGivesIndexesByUse: a new table gets the claim index only
// for plain lanes, the ordered pair for ordered lanes, tenant_claim for
// tenant lanes; MigrateFor of a narrower use drops nothing; a crash of
// version 5 halfway (one index dropped, the version unrecorded) completes.
func TestMigrateGivesIndexesByUse(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	for _, c := range []struct {
		use  store.TableUse
		want []string
	}{
		{store.TableUse{}, plainIndexes},
		{store.TableUse{Ordered: true}, append(slices.Clone(plainIndexes), "key_order", "ordered_claim")},
		{store.TableUse{Tenants: true}, append(slices.Clone(plainIndexes), "tenant_claim")},
	} {
		table := testenv.Name("herald_use")
		t.Cleanup(func() { dbtest.Drop(s, table) })
		if err := s.MigrateFor(ctx, table, c.use); err != nil {
			t.Fatalf("MigrateFor %s: %v", c.use, err)
		}
		if got := indexes(t, s, table); !slices.Equal(got, c.want) {
			t.Errorf("new table for %s: indexes %v, want %v", c.use, got, c.want)
		}
		if err := s.Migrate(ctx, table); err != nil {
			t.Fatal(err)
		}
		if got := indexes(t, s, table); !slices.Equal(got, c.want) {
			t.Errorf("Migrate after MigrateFor %s dropped indexes: %v, want %v", c.use, got, c.want)
		}
	}
	table := testenv.Name("herald_use")
	t.Cleanup(func() { dbtest.Drop(s, table) })
	if err := s.MigrateTo(ctx, table, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, "ALTER TABLE `"+table+"` DROP INDEX tenant_claim"); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx, table); err != nil {
		t.Fatalf("version 5 after a crash inside it: %v", err)
	}
	if got := indexes(t, s, table); !slices.Equal(got, plainIndexes) {
		t.Errorf("after version 5 completed: indexes %v, want %v", got, plainIndexes)
	}
}

// addIndexesUnderClaims checks a table migrated for plain lanes: ordered
// and tenant reads are refused with store.ErrMissingIndex (and
// store.CheckIndexes names the index, the table, the lane and the fix);
// then MigrateFor adds their indexes while another worker claims and
// marks plain batches (none of which may fail; the ALTER is quick on 3,000
// rows, so the test does not tell an online ALTER from a locking one: the
// server refuses LOCK=NONE where it cannot keep it), and they work.
func addIndexesUnderClaims(t *testing.T, s *mysql.Store, table string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if got := indexes(t, s, table); !slices.Equal(got, plainIndexes) {
		t.Fatalf("indexes after the upgrade for plain lanes: %v, want %v", got, plainIndexes)
	}
	err := store.CheckIndexes(ctx, s, table, store.TableUse{Ordered: true}, `lane "rooms"`)
	for _, part := range []string{`lane "rooms"`, "ordered_claim, key_order", table, "herald migrate"} {
		if !errors.Is(err, store.ErrMissingIndex) || !strings.Contains(err.Error(), part) {
			t.Errorf("CheckIndexes of an ordered lane: %v; want store.ErrMissingIndex naming %q", err, part)
		}
	}
	if _, err := s.ClaimableTenants(ctx, store.Scope{Table: table}, 10); !errors.Is(err, store.ErrMissingIndex) {
		t.Errorf("tenant list without tenant_claim: %v, want store.ErrMissingIndex", err)
	}
	if _, err := s.Ready(ctx, store.Scope{Table: table, Tenant: "t1"}); !errors.Is(err, store.ErrMissingIndex) {
		t.Errorf("tenant peek without tenant_claim: %v, want store.ErrMissingIndex", err)
	}
	const rows = 3000
	fill(ctx, t, s, table, rows)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var claimed int
	wg.Go(func() {
		for token := int64(100); ; token++ {
			select {
			case <-stop:
				return
			default:
			}
			recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: token,
				Lease: time.Minute, Limit: 50})
			if err != nil {
				t.Errorf("plain claim while the indexes are added: %v", err)
				return
			}
			ds := make([]store.Delivery, len(recs))
			for i, r := range recs {
				ds[i] = store.Delivery{ID: r.ID}
			}
			if lost, err := s.Complete(ctx, store.Fence{Table: table, Token: token}, ds); err != nil || len(lost) > 0 {
				t.Errorf("mark while the indexes are added: lost %v, %v", lost, err)
				return
			}
			claimed += len(recs)
		}
	})
	err = s.MigrateFor(ctx, table, everyUse)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("adding the indexes: %v", err)
	}
	t.Logf("%d rows claimed and marked while the indexes were added", claimed)
	if missing, err := s.MissingIndexes(ctx, table, everyUse); err != nil || len(missing) > 0 {
		t.Errorf("missing after MigrateFor: %v, %v", missing, err)
	}
	if _, err := s.DB().ExecContext(ctx, "INSERT INTO `"+table+"` (event_id, tenant, partition_key, topic, event_type) "+
		"VALUES ('after-t', 't9', '', 'orders', 'OrderPlaced'), ('after-k', '', 'k9', 'orders', 'OrderPlaced')"); err != nil {
		t.Fatal(err)
	}
	tenants, err := s.ClaimableTenants(ctx, store.Scope{Table: table}, 10)
	if err != nil || !slices.Contains(tenants, "t9") {
		t.Errorf("tenant list after the indexes were added: %v, %v", tenants, err)
	}
	recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table, Tenant: "t9"}, Owner: "w", Token: 90,
		Lease: time.Minute, Limit: 10})
	if err != nil || len(recs) != 1 || recs[0].Event.ID != "after-t" {
		t.Errorf("tenant claim after the indexes were added: %+v, %v", recs, err)
	}
	recs, err = s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Ordered: true, Owner: "w", Token: 91,
		Lease: time.Minute, Limit: rows + 10})
	if err != nil || !slices.ContainsFunc(recs, func(r store.Record) bool { return r.Event.ID == "after-k" }) {
		t.Errorf("ordered claim after the indexes were added: %d rows, %v", len(recs), err)
	}
}

// fill inserts n plain rows of 1 KiB into table, 500 per statement.
func fill(ctx context.Context, t *testing.T, s *mysql.Store, table string, n int) {
	t.Helper()
	for done := 0; done < n; done += 500 {
		values := make([]string, min(500, n-done))
		for i := range values {
			values[i] = fmt.Sprintf("('bulk-%d', 'orders', 'OrderPlaced', REPEAT('x', 1024))", done+i)
		}
		if _, err := s.DB().ExecContext(ctx, "INSERT INTO `"+table+"` (event_id, topic, event_type, payload) VALUES "+
			strings.Join(values, ", ")); err != nil {
			t.Fatal(err)
		}
	}
}
