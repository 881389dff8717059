package giftwall_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/drivers"
	"github.com/heraldhq/herald/examples/giftwall"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/sqlite"
)

func TestMain(m *testing.M) {
	// The RocketMQ SDK starts a cache janitor from a package variable,
	// before any test runs, and its consumers' sleepers outlive Shutdown
	// (testenv.LeakOptions); they are not ours.
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// drv are the brokers and databases the herald binary ships, which the
// tests read the demo's config files with.
var drv = config.Drivers{Brokers: drivers.Brokers(), Stores: drivers.Stores()}

// backend is one database the tests run on.
type backend struct {
	name string
	open func(t *testing.T) store.Store
}

// backends are SQLite (a file per test) and MariaDB (skipped when
// unreachable, failed when CI=true).
var backends = []backend{
	{"sqlite", func(t *testing.T) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "gw.db"), sqlite.Options{SynchronousNormal: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"mariadb", func(t *testing.T) store.Store {
		testenv.RequireDB(t, "mysql", testenv.MySQLDSN(), "MariaDB")
		s, err := mysql.Open(context.Background(), testenv.MySQLDSN(), mysql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
}

func forEachBackend(t *testing.T, fn func(t *testing.T, s store.Store)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b.open(t)) })
	}
}

// appTables are the tables an App with a prefix creates.
var appTables = []string{"wallet_balances", "wallet_transactions", "wallet_entries", "room_members", "user_gift_wall",
	"wallet_outbox", "room_outbox", "robot_outbox", "giftwall_projection_events"}

// newApp returns a migrated App on its own tables (a random prefix),
// dropped when the test ends.
func newApp(t *testing.T, s store.Store, cfg giftwall.Config) *giftwall.App {
	t.Helper()
	cfg.Store = s
	cfg.Prefix = testenv.Name("gw") + "_"
	a, err := giftwall.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, tb := range appTables {
			_, _ = s.DB().Exec("DROP TABLE IF EXISTS " + cfg.Prefix + tb)
		}
	})
	return a
}

// runRelay runs a relay on lanes until the test ends.
func runRelay(t *testing.T, s store.Store, obs relay.Observer, lanes ...relay.Lane) {
	t.Helper()
	r, err := relay.New(relay.Config{Store: s, Lanes: lanes, Logger: quiet(), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, within, 5*time.Millisecond, what, cond)
}

// laneOf picks one of an App's default lanes by name.
func laneOf(lanes []relay.Lane, name string) relay.Lane {
	for _, l := range lanes {
		if l.Name == name {
			return l
		}
	}
	panic("no lane " + name)
}
