package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/dbtest"
	"github.com/heraldhq/herald/store/postgres"
	"github.com/heraldhq/herald/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open returns a store on the test server and a migrated fresh table.
func open(t *testing.T) (*postgres.Store, string) {
	t.Helper()
	s := openStore(t)
	return s, dbtest.Migrated(t, s, "herald_pg")
}

func openStore(t testing.TB) *postgres.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, testenv.PostgresDSN(), postgres.Options{})
	if err != nil {
		testenv.Unreachable(t, "PostgreSQL", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// opener is openStore as the shared suites take it.
func opener(tb testing.TB) store.Store { return openStore(tb) }

// features are the optional abilities of a PostgreSQL store.
var features = storetest.Features{Wakeups: true, TenantSkipList: true, LogLanes: true, Previews: true}

func TestConformance(t *testing.T) { storetest.Run(t, opener, features) }

func TestProjections(t *testing.T) { storetest.RunProjections(t, opener) }

// TestStress: workers on two pools, short leases that some publishes
// outlast, failures retried: each event completes once, keys in order.
func TestStress(t *testing.T) { dbtest.StressLanes(t, opener) }

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, opener)
}

// BenchmarkOrdered is claim + Complete on an ordered lane with many keys,
// next to BenchmarkStore's unordered figures.
func BenchmarkOrdered(b *testing.B) {
	for _, keys := range []int{10, 10000} {
		b.Run(fmt.Sprintf("keys=%d/batch=100", keys), func(b *testing.B) {
			dbtest.BenchOrdered(b, openStore(b), keys, 100)
		})
	}
}

func TestClaimComplete(t *testing.T) {
	s, table := open(t)
	dbtest.ClaimComplete(t, s, table)
}

// TestOrderedLockedHeadBlocksKey: a row lock on a key's head, as a worker
// in the middle of its claim holds, keeps the key's later rows unclaimed.
func TestOrderedLockedHeadBlocksKey(t *testing.T) {
	s, table := open(t)
	dbtest.OrderedLockedHeadBlocksKey(t, s, table)
}

// TestMigrateRace runs Migrate from several stores at once, as several
// relays starting together would.
func TestMigrateRace(t *testing.T) {
	dbtest.MigrateRace(t, opener)
}

// TestPostgresUpgradeToAttemptErrors upgrades a version-2 table to version
// 3, which adds attempt_errors (see dbtest.UpgradeToAttemptErrors).
func TestPostgresUpgradeToAttemptErrors(t *testing.T) {
	dbtest.UpgradeToAttemptErrors(t, openStore(t), 3, true)
}
