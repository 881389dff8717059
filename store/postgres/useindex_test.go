package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/dbtest"
	"github.com/heraldhq/herald/store/postgres"
)

var ordered = store.TableUse{Ordered: true}

// orderedClaim reports whether table has a valid ordered_claim index.
func orderedClaim(t *testing.T, s *postgres.Store, table string) bool {
	t.Helper()
	var valid bool
	err := s.DB().QueryRow(`SELECT COALESCE((SELECT indisvalid FROM pg_index
  WHERE indexrelid = to_regclass(quote_ident($1))), false)`, table+"_ordered_claim").Scan(&valid)
	if err != nil {
		t.Fatal(err)
	}
	return valid
}

// indexDef is the definition of the index name, "" if there is none.
func indexDef(t *testing.T, s *postgres.Store, name string) string {
	t.Helper()
	var def string
	err := s.DB().QueryRow(`SELECT COALESCE((SELECT indexdef FROM pg_indexes WHERE indexname = $1), '')`, name).Scan(&def)
	if err != nil {
		t.Fatal(err)
	}
	return def
}

// TestMigrateGivesOrderedClaimByUse: a new table gets ordered_claim only
// for ordered lanes; a later Migrate for plain lanes leaves it; an upgrade
// from version 1 or 3 drops it unless ordered lanes are named (and keeps
// version 2's narrower definition for them); a relay's check
// of an ordered lane on a table without it names the lane, the index, the
// table and the fix.
func TestMigrateGivesOrderedClaimByUse(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	for _, use := range []store.TableUse{{}, ordered, {Tenants: true}} {
		table := testenv.Name("herald_use")
		t.Cleanup(func() { dbtest.Drop(s, table) })
		if err := s.MigrateFor(ctx, table, use); err != nil {
			t.Fatalf("MigrateFor %s: %v", use, err)
		}
		if got := orderedClaim(t, s, table); got != use.Ordered {
			t.Errorf("new table for %s: ordered_claim %v, want %v", use, got, use.Ordered)
		}
		if err := s.Migrate(ctx, table); err != nil {
			t.Fatal(err)
		}
		if got := orderedClaim(t, s, table); got != use.Ordered {
			t.Errorf("Migrate after MigrateFor %s: ordered_claim %v, want %v", use, got, use.Ordered)
		}
	}
	for _, from := range []int{1, 3} {
		for _, use := range []store.TableUse{{}, ordered} {
			table := testenv.Name("herald_up")
			t.Cleanup(func() { dbtest.Drop(s, table) })
			if err := s.MigrateTo(ctx, table, from); err != nil {
				t.Fatal(err)
			}
			if !orderedClaim(t, s, table) {
				t.Fatalf("version %d table without ordered_claim", from)
			}
			if err := s.MigrateFor(ctx, table, use); err != nil {
				t.Fatal(err)
			}
			if got := orderedClaim(t, s, table); got != use.Ordered {
				t.Errorf("upgrade from version %d for %s: ordered_claim %v, want %v", from, use, got, use.Ordered)
			}
			if def := indexDef(t, s, table+"_ordered_claim"); use.Ordered && !strings.HasSuffix(def, "WHERE (status = 'pending'::text)") {
				t.Errorf("upgrade from version %d for ordered lanes: ordered_claim is %q, want version 2's (pending rows only)", from, def)
			}
		}
	}
	table := testenv.Name("herald_use")
	t.Cleanup(func() { dbtest.Drop(s, table) })
	if err := s.Migrate(ctx, table); err != nil {
		t.Fatal(err)
	}
	err := store.CheckIndexes(ctx, s, table, ordered, `lane "rooms"`)
	for _, part := range []string{`lane "rooms"`, "ordered_claim", table, "herald migrate"} {
		if !errors.Is(err, store.ErrMissingIndex) || !strings.Contains(err.Error(), part) {
			t.Errorf("CheckIndexes of an ordered lane: %v; want store.ErrMissingIndex naming %q", err, part)
		}
	}
	if err := store.CheckIndexes(ctx, s, table, store.TableUse{Tenants: true}, `lane "fair"`); err != nil {
		t.Errorf("CheckIndexes of a fair lane (its partial index is always there): %v", err)
	}
}

// TestMigrateForAddsOrderedClaimOnline: on a filled table migrated for
// plain lanes, three stores add ordered_claim at once while a worker claims
// and marks plain batches and a producer inserts (none may fail, nor any
// of the three); the table ends with one valid ordered_claim, and an
// ordered claim then reads it. (The build of 20,000 rows is quick, so the
// test does not tell an online build from a locking one, nor one build
// from three: the try-lock and the validity check under it are what make
// it once.) An invalid index, as a failed CREATE INDEX CONCURRENTLY leaves,
// is built again.
func TestMigrateForAddsOrderedClaimOnline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := openStore(t)
	table := testenv.Name("herald_online")
	t.Cleanup(func() { dbtest.Drop(s, table) })
	if err := s.Migrate(ctx, table); err != nil {
		t.Fatal(err)
	}
	insert := func(from, n int) error {
		_, err := s.DB().ExecContext(ctx, `INSERT INTO "`+table+`" (event_id, topic, event_type, partition_key)
  SELECT 'e' || g, 'rooms', 'Joined', 'k' || (g % 7) FROM generate_series($1::int, $2::int) g`, from, from+n-1)
		return err
	}
	if err := insert(1, 20000); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	busy := func(name string, step func(i int) error) {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := step(i); err != nil {
					t.Errorf("%s while ordered_claim is added: %v", name, err)
					return
				}
			}
		})
	}
	busy("plain claim and mark", func(i int) error {
		token := int64(100 + i)
		recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: token,
			Lease: time.Minute, Limit: 50})
		if err != nil {
			return err
		}
		ds := make([]store.Delivery, len(recs))
		for i, r := range recs {
			ds[i] = store.Delivery{ID: r.ID}
		}
		if lost, err := s.Complete(ctx, store.Fence{Table: table, Token: token}, ds); err != nil || len(lost) > 0 {
			return fmt.Errorf("mark: lost %v, %v", lost, err)
		}
		return nil
	})
	busy("insert", func(i int) error { return insert(100000+i*10, 10) })
	errs := make(chan error, 3)
	for _, other := range []*postgres.Store{openStore(t), openStore(t), openStore(t)} {
		wg.Go(func() { errs <- other.MigrateFor(ctx, table, ordered) })
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Errorf("MigrateFor ordered: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	if !orderedClaim(t, s, table) {
		t.Fatal("ordered_claim not valid after MigrateFor")
	}
	var n int
	if err := s.DB().QueryRow(`SELECT count(*) FROM pg_indexes WHERE tablename = $1 AND indexname LIKE '%ordered_claim%'`,
		table).Scan(&n); err != nil || n != 1 {
		t.Errorf("ordered_claim indexes: %d, %v; want 1", n, err)
	}
	recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "o", Token: 1,
		Lease: time.Minute, Limit: 10, Ordered: true})
	if err != nil || len(recs) == 0 {
		t.Errorf("ordered claim after MigrateFor: %d rows, %v", len(recs), err)
	}
	// What a build that failed halfway leaves: the index, marked invalid.
	if _, err := s.DB().Exec(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(quote_ident($1))`,
		table+"_ordered_claim"); err != nil {
		t.Fatal(err)
	}
	if missing, err := s.MissingIndexes(ctx, table, ordered); err != nil || len(missing) != 1 {
		t.Errorf("an invalid ordered_claim: missing %v, %v; want it named", missing, err)
	}
	if err := s.MigrateFor(ctx, table, ordered); err != nil {
		t.Fatal(err)
	}
	if !orderedClaim(t, s, table) {
		t.Error("ordered_claim still invalid after MigrateFor")
	}
}
