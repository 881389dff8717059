// Package clustertest runs the load of the clustered-broker tests: an
// outbox of many events on SQLite relayed to a broker while the test breaks
// the broker's nodes, and projections that count what they receive.
package clustertest

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/projector/projectortest"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// Table is the outbox table of a Load.
const Table = "outbox"

// Events is how many events a cluster test relays: 50,000, or 5,000 under
// the race detector (which slows the pure-Go SQLite driver and the
// in-process servers tenfold or more).
func Events() int {
	if testenv.RaceEnabled {
		return 5_000
	}
	return 50_000
}

// Within scales a wait for the race detector: three times as long under it.
func Within(d time.Duration) time.Duration {
	if testenv.RaceEnabled {
		return 3 * d
	}
	return d
}

// Load is an outbox full of counting events (projectortest.Event).
type Load struct {
	Store projectortest.Store
	// Sent is how many events each key got; their sequence numbers run
	// from 1 in commit order.
	Sent map[string]int64
	N    int
	// logs keeps the relay's warnings, shown when a wait fails.
	logs logBuffer
}

// logBuffer is a relay log kept for a failed test to show its end.
type logBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

// tail is the last n bytes written.
func (l *logBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b[max(0, len(l.b)-n):])
}

// NewLoad commits n events over keys partition keys, round robin, in
// transactions of 1,000, to a fresh SQLite outbox.
func NewLoad(t testing.TB, n, keys int) *Load {
	t.Helper()
	ctx := context.Background()
	s := projectortest.SQLite(filepath.Join(t.TempDir(), "outbox.db"))(t)
	// Its lanes may keep per-key order (Lane).
	if err := store.MigrateFor(ctx, s, Table, store.TableUse{Ordered: true}); err != nil {
		t.Fatal(err)
	}
	ob, err := herald.NewOutbox(herald.OutboxConfig{Table: Table, Dialect: s.Dialect()})
	if err != nil {
		t.Fatal(err)
	}
	l := &Load{Store: s, Sent: map[string]int64{}, N: n}
	for i := 0; i < n; i += 1000 {
		var evs []herald.Event
		for j := i; j < min(i+1000, n); j++ {
			key := fmt.Sprintf("k%03d", j%keys)
			l.Sent[key]++
			evs = append(evs, projectortest.Event(key, l.Sent[key]))
		}
		if err := enqueue(ctx, s.DB(), ob, evs); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func enqueue(ctx context.Context, db *sql.DB, ob *herald.Outbox, evs []herald.Event) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := ob.Enqueue(ctx, tx, evs...); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Lane is a lane of the load's table to pub, with retries that keep
// trying through an election (a few seconds) without going dead. Under the
// race detector batches are smaller and publishes get longer: a replicated
// ack of 250 messages takes seconds there on a busy machine.
func Lane(pub broker.Publisher, dest string, ordering relay.Ordering) relay.Lane {
	l := relay.Lane{
		Name: "cluster", Table: Table, Publisher: pub, Destination: broker.MustParseTemplate(dest),
		Ordering: ordering, Concurrency: 4, BatchSize: 250,
		PollInterval: 50 * time.Millisecond, PublishTimeout: 3 * time.Second,
		Retry: relay.Retry{Initial: 50 * time.Millisecond, Max: time.Second, MaxAttempts: 10},
	}
	if testenv.RaceEnabled {
		l.Concurrency, l.BatchSize, l.PublishTimeout = 2, 100, 10*time.Second
	}
	return l
}

// Relay runs a relay over lanes until the test ends; the returned function
// stops it and waits.
func (l *Load) Relay(t testing.TB, lanes ...relay.Lane) (stop func()) {
	t.Helper()
	r, err := relay.New(relay.Config{Store: l.Store, Lanes: lanes, Node: "cluster",
		Logger: slog.New(slog.NewTextHandler(&l.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := r.Run(ctx); err != nil {
			t.Errorf("relay: %v", err)
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// Stats counts the outbox's rows by state.
func (l *Load) Stats(t testing.TB) store.LaneStats {
	t.Helper()
	st, err := l.Store.Stats(context.Background(), store.Scope{Table: Table})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// WaitDelivered waits until at least n rows are delivered, failing on a
// dead row (none may go dead through a failover) or after within (scaled
// by Within).
func (l *Load) WaitDelivered(t testing.TB, n int, within time.Duration) {
	t.Helper()
	var st store.LaneStats
	defer func() {
		if t.Failed() {
			t.Logf("outbox stats when the wait ended: %+v; undelivered rows' last errors: %v\nend of the relay's warnings:\n%s",
				st, l.lastErrors(t), l.logs.tail(4000))
		}
	}()
	testenv.WaitFor(t, Within(within), 20*time.Millisecond, fmt.Sprintf("%d events delivered", n), func() bool {
		st = l.Stats(t)
		if st.Dead > 0 {
			t.Fatalf("%d events dead (stats %+v); none may die through a failover", st.Dead, st)
		}
		return st.Delivered >= int64(n)
	})
}

// Model is a counting read model on its own SQLite file, which projector
// processes (in this process or children) open by Path.
type Model struct {
	Path  string
	Table string // the projection bookkeeping table
	Store projectortest.Store
	Count *projectortest.Model
}

// NewModel creates the read model and the projection table.
func NewModel(t testing.TB) *Model {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.db")
	s := projectortest.SQLite(path)(t)
	m := &Model{Path: path, Table: "herald_pe", Store: s, Count: projectortest.NewModel(t, s)}
	if err := s.MigrateProjections(context.Background(), m.Table); err != nil {
		t.Fatal(err)
	}
	return m
}

// Projector is a projector of the model on its own pool of the model's
// file, as another process would have.
func (m *Model) Projector(t testing.TB) *projector.Projector {
	t.Helper()
	return ProjectorOn(t, projectortest.SQLite(m.Path)(t), m.Table, projectortest.ModelOn(m.Store, m.Count.Table), io.Discard)
}

// ProjectorOn is the counting projector over s, logging warnings to logs
// (also used by children, which open the model by path and log to stderr,
// so that a stalled member says why).
func ProjectorOn(t testing.TB, s projectortest.Store, table string, count *projectortest.Model, logs io.Writer) *projector.Projector {
	t.Helper()
	p, err := projector.New(projector.Config{
		Settings: projector.Settings{Name: "count", Table: table, Workers: 4, BatchSize: 256,
			Backoff: projector.Backoff{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}},
		Store: s, Handler: count.Bump,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// WaitProjected waits until the model counts n events, for at most
// within (scaled by Within).
func (m *Model) WaitProjected(t testing.TB, n int, within time.Duration) {
	t.Helper()
	testenv.WaitFor(t, Within(within), 20*time.Millisecond, fmt.Sprintf("%d events projected", n), func() bool {
		return m.Count.Total(t, m.Store.DB()) >= int64(n)
	})
}

// CheckExactlyOnce checks that every key counts what was sent to it, and
// that the bookkeeping has every event done, none failed or dead.
func (m *Model) CheckExactlyOnce(t testing.TB, sent map[string]int64) {
	t.Helper()
	var total int64
	for key, n := range sent {
		total += n
		if got := m.Count.Count(t, m.Store.DB(), key); got != n {
			t.Errorf("[exactly once] key %s counted %d, want %d", key, got, n)
		}
	}
	if got := m.Count.Total(t, m.Store.DB()); got != total {
		t.Errorf("[exactly once] read model total %d, want %d", got, total)
	}
	st, err := m.Store.ProjectionStats(context.Background(), m.Table, "count")
	if err != nil || len(st) != 1 || st[0].Done != total || st[0].Failed+st[0].Dead != 0 {
		t.Errorf("[bookkeeping] stats %+v, %v; want %d done, none failed or dead", st, err, total)
	}
}

// lastErrors counts the distinct last errors (with attempts) of the rows
// not yet delivered, for a failed wait to say what held them.
func (l *Load) lastErrors(t testing.TB) map[string]int {
	errs := map[string]int{}
	for _, status := range []store.Status{store.StatusPending, store.StatusInFlight} {
		rs, err := l.Store.List(context.Background(), store.ListParams{Scope: store.Scope{Table: Table},
			Status: status, Limit: 1000})
		if err != nil {
			t.Errorf("listing %s rows: %v", status, err)
			continue
		}
		for _, r := range rs {
			errs[fmt.Sprintf("%s after %d attempts: %s", status, r.Attempts, r.LastError)]++
		}
	}
	return errs
}

// Retried logs how many delivered rows took more than one attempt, and the
// distinct last errors of a few: evidence that the failures hit publishes.
func (l *Load) Retried(t testing.TB) int {
	t.Helper()
	retried, errs := 0, map[string]int{}
	for after := int64(0); ; {
		rs, err := l.Store.List(context.Background(), store.ListParams{Scope: store.Scope{Table: Table},
			Status: store.StatusDelivered, AfterID: after, Limit: 5000})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 {
			break
		}
		for _, r := range rs {
			after = r.ID
			if r.Attempts > 1 {
				retried++
				if len(errs) < 8 {
					errs[r.LastError]++
				}
			}
		}
	}
	t.Logf("%d delivered rows took more than one attempt; some last errors: %v", retried, errs)
	return retried
}
