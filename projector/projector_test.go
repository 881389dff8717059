package projector_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/projector/projectortest"
	"github.com/heraldhq/herald/store"
)

func TestMain(m *testing.M) {
	if args := os.Getenv(childEnv); args != "" {
		runChild(args) // never returns
	}
	// pgx closes a connection whose query was cancelled in a goroutine of
	// its own that may outlive the test on a loaded machine: not a leak.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/jackc/pgx/v5/pgconn.(*PgConn).asyncClose.func1"))
}

// fixture is one test's store, read model and projection table.
type fixture struct {
	t     *testing.T
	open  projectortest.Opener
	s     projectortest.Store
	model *projectortest.Model
	table string
}

func newFixture(t *testing.T, b projectortest.Backend) *fixture {
	open := b.Open(t)
	s := open(t)
	f := &fixture{t: t, open: open, s: s, model: projectortest.NewModel(t, s), table: projectortest.Name("herald_pe")}
	if err := s.MigrateProjections(context.Background(), f.table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = s.DB().Exec("DROP TABLE " + f.table) })
	return f
}

// config returns a projector config on a new pool of the fixture's database.
func (f *fixture) config(h projector.Handler) projector.Config {
	return projector.Config{
		Settings: projector.Settings{Name: "count", Table: f.table,
			Backoff: projector.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}},
		Store: f.open(f.t), Handler: h, Logger: slog.New(slog.DiscardHandler),
	}
}

func (f *fixture) stats() store.ProjectionStats {
	f.t.Helper()
	st, err := f.s.ProjectionStats(context.Background(), f.table, "count")
	if err != nil {
		f.t.Fatal(err)
	}
	if len(st) == 0 {
		return store.ProjectionStats{}
	}
	return st[0]
}

// sliceSource hands out its messages once, then waits. It counts settles.
type sliceSource = projectortest.SliceSource

func newSliceSource(evs ...herald.Event) *sliceSource { return projectortest.NewSliceSource(evs...) }

// run runs p on src until stop is called.
func run(t *testing.T, p *projector.Projector, src broker.Subscriber) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Run(ctx, src); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func forEachBackend(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for _, b := range projectortest.Backends() {
		t.Run(b.Name, func(t *testing.T) { fn(t, newFixture(t, b)) })
	}
}

// TestFiveConcurrentDeliveries delivers one event five times at once, to
// five projectors (each its own pool, as five processes) with several
// workers each: it is applied once and every delivery is acked.
func TestFiveConcurrentDeliveries(t *testing.T) {
	forEachBackend(t, func(t *testing.T, f *fixture) {
		for round := range 3 {
			ev := projectortest.Event("five", int64(round))
			var calls atomic.Int32
			var srcs []*sliceSource
			for range 5 {
				p, err := projector.New(f.config(func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
					calls.Add(1)
					return f.model.Bump(ctx, tx, ev)
				}))
				if err != nil {
					t.Fatal(err)
				}
				src := newSliceSource(ev)
				srcs = append(srcs, src)
				defer run(t, p, src)()
			}
			for _, src := range srcs {
				src.WaitAcks(t, 1)
			}
			if n := f.model.Count(t, f.s.DB(), "five"); n != int64(round+1) {
				t.Fatalf("[exactly once] round %d: read model counted %d, want %d (handler calls %d)", round, n, round+1, calls.Load())
			}
		}
	})
}

// TestFailTwiceThenSucceed: a handler failing twice, then succeeding,
// applies the event once, with the failures recorded and the event acked
// only after it is done.
func TestFailTwiceThenSucceed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, f *fixture) {
		var calls atomic.Int32
		p, err := projector.New(f.config(func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
			if err := f.model.Bump(ctx, tx, ev); err != nil {
				return err
			}
			if calls.Add(1) <= 2 {
				return errors.New("flaky read model")
			}
			return nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		src := newSliceSource(projectortest.Event("flaky", 1))
		defer run(t, p, src)()
		src.WaitAcks(t, 1)
		if n := f.model.Count(t, f.s.DB(), "flaky"); n != 1 || calls.Load() != 3 {
			t.Errorf("[exactly once] counted %d after %d calls, want 1 after 3", n, calls.Load())
		}
		if st := f.stats(); st.Done != 1 || st.Failed != 0 || st.Dead != 0 {
			t.Errorf("[bookkeeping] %+v", st)
		}
	})
}

// TestBadPayloadGoesDead: a permanent error sends the event dead after one
// try; the events behind it on the same key still apply, and all are acked.
func TestBadPayloadGoesDead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, f *fixture) {
		var badCalls atomic.Int32
		p, err := projector.New(f.config(func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
			if string(ev.Payload) == "not json" {
				badCalls.Add(1)
			}
			return f.model.Bump(ctx, tx, ev)
		}))
		if err != nil {
			t.Fatal(err)
		}
		bad := projectortest.Event("poison", 1)
		bad.Payload = []byte("not json")
		src := newSliceSource(bad, projectortest.Event("poison", 2), projectortest.Event("poison", 3))
		defer run(t, p, src)()
		src.WaitAcks(t, 3)
		if n := f.model.Count(t, f.s.DB(), "poison"); n != 2 || badCalls.Load() != 1 {
			t.Errorf("[poison] counted %d with %d tries of the bad event; want 2 and 1", n, badCalls.Load())
		}
		st := f.stats()
		if st.Done != 2 || st.Dead != 1 {
			t.Errorf("[poison] stats %+v, want 2 done and 1 dead", st)
		}
		rows, err := f.s.ListProjection(context.Background(), store.ProjectionListParams{Table: f.table, Projection: "count", State: store.ProjectionDead})
		if err != nil || len(rows) != 1 || rows[0].EventID != bad.ID || string(rows[0].Event.Payload) != "not json" {
			t.Errorf("[dead is visible] %+v, %v", rows, err)
		}
	})
}

// TestReplayDead: a dead event replayed after its handler is fixed is
// applied by the sweep, from the event kept on its row.
func TestReplayDead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, f *fixture) {
		var fixed atomic.Bool
		cfg := f.config(func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
			if !fixed.Load() {
				return herald.Permanent(errors.New("handler bug"))
			}
			return f.model.Bump(ctx, tx, ev)
		})
		cfg.SweepInterval = 20 * time.Millisecond
		p, err := projector.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		src := newSliceSource(projectortest.Event("replay", 1))
		defer run(t, p, src)()
		src.WaitAcks(t, 1)
		fixed.Store(true)
		if n, err := f.s.ReplayProjection(context.Background(), f.table, "count", nil); err != nil || n != 1 {
			t.Fatalf("replay: %d, %v", n, err)
		}
		projectortest.Eventually(t, 10*time.Second, "[replay] replayed event applied", func() bool {
			return f.model.Count(t, f.s.DB(), "replay") == 1
		})
		if st := f.stats(); st.Done != 1 || st.Dead != 0 {
			t.Errorf("[replay] stats %+v", st)
		}
	})
}

// TestRebuild resets the rows and the read model; the outbox source then
// projects everything again.
func TestRebuild(t *testing.T) {
	forEachBackend(t, func(t *testing.T, f *fixture) {
		outbox := projectortest.Name("herald_ob")
		if err := f.s.Migrate(context.Background(), outbox); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = f.s.DB().Exec("DROP TABLE " + outbox) })
		enqueue(t, f.s, outbox, 20)
		cfg := f.config(f.model.Bump)
		cfg.Reset = f.model.Reset
		p, err := projector.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		src, err := projector.NewOutboxSource(projector.OutboxConfig{Store: f.open(t), Scope: store.Scope{Table: outbox},
			Projection: "count", ProjectionTable: f.table, PollInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		stop := run(t, p, src)
		projectortest.Eventually(t, 20*time.Second, "[outbox] all projected", func() bool { return f.model.Total(t, f.s.DB()) == 20 })
		stop()
		if n, err := p.Rebuild(context.Background(), src); err != nil || n != 20 {
			t.Fatalf("Rebuild = %d, %v", n, err)
		}
		if got := f.model.Total(t, f.s.DB()); got != 0 {
			t.Fatalf("[rebuild] reset hook left %d", got)
		}
		defer run(t, p, src)()
		projectortest.Eventually(t, 20*time.Second, "[rebuild] all projected again", func() bool { return f.model.Total(t, f.s.DB()) == 20 })
	})
}

// enqueue commits n counting events to the outbox table, one per key.
func enqueue(t *testing.T, s projectortest.Store, table string, n int) []herald.Event {
	t.Helper()
	ob, err := herald.NewOutbox(herald.OutboxConfig{Dialect: s.Dialect(), Table: table})
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]herald.Event, n)
	for i := range evs {
		evs[i] = projectortest.Event("k", int64(i+1))
		evs[i].PartitionKey = evs[i].ID
	}
	tx, err := s.DB().Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Enqueue(context.Background(), tx, evs...); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestDoneRetention: with a dedupe horizon, done rows older than it are
// deleted by the running projector; failed and dead rows are kept.
func TestDoneRetention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, f *fixture) {
		cfg := f.config(f.model.Bump)
		cfg.DoneRetention = time.Millisecond
		cfg.SweepInterval = 10 * time.Millisecond
		p, err := projector.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		bad := projectortest.Event("ret", 1)
		bad.Payload = []byte("not json")
		src := newSliceSource(projectortest.Event("ret", 2), projectortest.Event("ret", 3), bad)
		defer run(t, p, src)()
		src.WaitAcks(t, 3)
		projectortest.Eventually(t, 10*time.Second, "[retention] done rows deleted", func() bool {
			st := f.stats()
			return st.Done == 0 && st.Dead == 1
		})
	})
}
