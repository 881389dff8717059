package relay

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/internal/testenv"
	. "github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/sqlite"
)

// Third-party goroutines started when a library is loaded (glog with
// vitess, the Google Cloud client's) are ignored (testenv.LeakOptions);
// nothing else may leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// env is one test's SQLite store, outbox table and in-memory broker: the
// harness of relay/harness_test.go, which the tests here share (relay's
// own tests are internal to the package, so they cannot import one).
type env struct {
	t     testing.TB
	store store.Store
	ob    *herald.Outbox
	pub   *memory.Publisher
	table string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvTB(t, filepath.Join(t.TempDir(), "herald.db"))
}

func newEnvTB(t testing.TB, path string) *env {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.Options{SynchronousNormal: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	table := "outbox"
	if err := s.Migrate(ctx, table); err != nil {
		t.Fatal(err)
	}
	ob, err := herald.NewOutbox(herald.OutboxConfig{Table: table, Dialect: s.Dialect()})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, store: s, ob: ob, pub: memory.New(memory.Config{}), table: table}
}

// enqueue commits events in one transaction.
func (e *env) enqueue(events ...herald.Event) {
	e.t.Helper()
	tx, err := e.store.DB().Begin()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.ob.Enqueue(context.Background(), tx, events...); err != nil {
		e.t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		e.t.Fatal(err)
	}
}

// events returns n events of one key and type with ids "<prefix>-<i>".
func events(prefix, key string, n int) []herald.Event {
	evs := make([]herald.Event, n)
	for i := range evs {
		evs[i] = herald.Event{ID: fmt.Sprintf("%s-%03d", prefix, i), Topic: "t", Type: "Happened",
			PartitionKey: key, Payload: []byte(`{"n":` + fmt.Sprint(i) + `}`)}
	}
	return evs
}

// lane returns a fast lane over the env's table and broker.
func (e *env) lane(mod ...func(*Lane)) Lane {
	l := Lane{Name: "test", Table: e.table, Publisher: e.pub, Destination: broker.MustParseTemplate("t.{event_type}"),
		PollInterval: 20 * time.Millisecond, PublishTimeout: 500 * time.Millisecond,
		Retry: Retry{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, MaxAttempts: 5}}
	for _, m := range mod {
		m(&l)
	}
	return l
}

// running is a relay started in the background.
type running struct {
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	stats  []BatchStats
}

// start runs a relay over lanes until the test ends (or stop is called),
// keeping every batch's stats.
func (e *env) start(lanes ...Lane) *running {
	e.t.Helper()
	return e.startObserved(Config{Lanes: lanes})
}

// startObserved runs a relay configured by cfg, keeping every batch's
// stats (cfg's Observer is replaced).
func (e *env) startObserved(cfg Config) *running {
	e.t.Helper()
	r := &running{done: make(chan error, 1)}
	cfg.Observer = ObserverFunc(func(s BatchStats) {
		r.mu.Lock()
		r.stats = append(r.stats, s)
		r.mu.Unlock()
	})
	return e.run(r, cfg)
}

// startWith runs a relay configured by cfg over the env's store.
func (e *env) startWith(cfg Config) *running {
	return e.run(&running{done: make(chan error, 1)}, cfg)
}

func (e *env) run(r *running, cfg Config) *running {
	cfg.Store, cfg.Node = e.store, "test"
	if cfg.Logger == nil {
		var out io.Writer = io.Discard
		if os.Getenv("HERALD_TEST_LOG") != "" {
			out = os.Stderr // to see a failing test's relay
		}
		cfg.Logger = slog.New(slog.NewTextHandler(out, nil))
	}
	rl, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		err := rl.Run(ctx)
		if err != nil && ctx.Err() == nil {
			// Before the test stopped it: fail the test, whose waits
			// (testenv.WaitFor) then give up instead of running out.
			e.t.Errorf("relay stopped by itself: %v", err)
		}
		r.done <- err
	}()
	e.t.Cleanup(r.stop)
	return r
}

func (r *running) stop() {
	r.cancel()
	<-r.done
	r.done <- nil // later stops return at once
}

func (r *running) total(f func(BatchStats) int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.stats {
		n += f(s)
	}
	return n
}

// waitFor polls cond every 2ms until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, timeout, 2*time.Millisecond, what, cond)
}

func (e *env) stats() store.LaneStats {
	e.t.Helper()
	st, err := e.store.Stats(context.Background(), store.Scope{Table: e.table})
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

func (e *env) get(id string) store.Record {
	e.t.Helper()
	rec, err := e.store.Get(context.Background(), e.table, id)
	if err != nil {
		e.t.Fatalf("get %s: %v", id, err)
	}
	return rec
}
