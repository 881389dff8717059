package projector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/projector/projectortest"
	"github.com/heraldhq/herald/store"
)

// newOutbox migrates a fresh outbox table in f's database.
func (f *fixture) newOutbox() string {
	f.t.Helper()
	table := projectortest.Name("herald_ob")
	if err := f.s.Migrate(context.Background(), table); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _, _ = f.s.DB().Exec("DROP TABLE " + table) })
	return table
}

func (f *fixture) outboxSource(table string, lookback, full time.Duration) *projector.OutboxSource {
	f.t.Helper()
	src, err := projector.NewOutboxSource(projector.OutboxConfig{Store: f.open(f.t), Scope: store.Scope{Table: table},
		Projection: "count", ProjectionTable: f.table, PollInterval: 5 * time.Millisecond,
		Lookback: lookback, FullScanInterval: full})
	if err != nil {
		f.t.Fatal(err)
	}
	return src
}

// TestOutboxCommitOrder commits a lower outbox id after a higher one was
// projected: the id, missing when the higher one was read, is read again
// until it commits, long before a sweep. SQLite has one writer, so ids
// commit in order there and the case cannot arise; it runs on MySQL and
// PostgreSQL.
func TestOutboxCommitOrder(t *testing.T) {
	for _, b := range projectortest.Backends()[1:] {
		t.Run(b.Name, func(t *testing.T) {
			commitOutOfOrder(t, newFixture(t, b), time.Minute, time.Hour, "[commit order] the lower id committed later is projected")
		})
	}
}

// TestOutboxSweepFindsVeryLateCommits commits a lower id after its gap was
// given up (Lookback 1ms): the sweep from the first id finds it.
func TestOutboxSweepFindsVeryLateCommits(t *testing.T) {
	for _, b := range projectortest.Backends()[1:] {
		t.Run(b.Name, func(t *testing.T) {
			commitOutOfOrder(t, newFixture(t, b), time.Millisecond, 300*time.Millisecond, "[sweep] a commit later than the lookback is projected")
		})
	}
}

// commitOutOfOrder holds a transaction that took the lower id open while
// a later one commits and is projected, then commits it and waits for it.
func commitOutOfOrder(t *testing.T, f *fixture, lookback, full time.Duration, rule string) {
	table := f.newOutbox()
	ob, err := herald.NewOutbox(herald.OutboxConfig{Dialect: f.s.Dialect(), Table: table})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	early, late := projectortest.Event("early", 1), projectortest.Event("late", 1)
	slow, err := f.s.DB().BeginTx(ctx, nil) // takes the lower id, commits last
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback()
	if err := ob.Enqueue(ctx, slow, early); err != nil {
		t.Fatal(err)
	}
	fast, err := f.s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Enqueue(ctx, fast, late); err != nil {
		t.Fatal(err)
	}
	if err := fast.Commit(); err != nil {
		t.Fatal(err)
	}
	p, err := projector.New(f.config(f.model.Bump))
	if err != nil {
		t.Fatal(err)
	}
	defer run(t, p, f.outboxSource(table, lookback, full))()
	projectortest.Eventually(t, 10*time.Second, "[outbox] the higher id is projected",
		func() bool { return f.model.Count(t, f.s.DB(), "late") == 1 })
	time.Sleep(min(2*lookback, time.Second)) // the gap given up, when the lookback is short: a state to reach, not a wait for one
	if err := slow.Commit(); err != nil {
		t.Fatal(err)
	}
	projectortest.Eventually(t, 10*time.Second, rule, func() bool { return f.model.Count(t, f.s.DB(), "early") == 1 })
}

// TestOutboxSourceManyWorkers projects 2,000 outbox events with two
// projector processes of four workers each: totals equal the events.
func TestOutboxSourceManyWorkers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, f *fixture) {
		table := f.newOutbox()
		const n = 2000
		enqueueKeyed(t, f.s, table, n, 20)
		for range 2 {
			p, err := projector.New(f.config(f.model.Bump))
			if err != nil {
				t.Fatal(err)
			}
			defer run(t, p, f.outboxSource(table, 0, 0))()
		}
		projectortest.Eventually(t, 60*time.Second, "[outbox] all projected", func() bool { return f.model.Total(t, f.s.DB()) >= n })
		if got := f.model.Total(t, f.s.DB()); got != n {
			t.Errorf("[exactly once] total %d, want %d", got, n)
		}
	})
}

// enqueueKeyed commits n counting events over keys partition keys, in
// transactions of 500.
func enqueueKeyed(tb testing.TB, s projectortest.Store, table string, n, keys int) {
	tb.Helper()
	ob, err := herald.NewOutbox(herald.OutboxConfig{Dialect: s.Dialect(), Table: table})
	if err != nil {
		tb.Fatal(err)
	}
	seq := map[string]int64{}
	for start := 0; start < n; start += 500 {
		var evs []herald.Event
		for i := start; i < min(n, start+500); i++ {
			k := fmt.Sprintf("k%02d", i%keys)
			seq[k]++
			evs = append(evs, projectortest.Event(k, seq[k]))
		}
		tx, err := s.DB().Begin()
		if err != nil {
			tb.Fatal(err)
		}
		if err := ob.Enqueue(context.Background(), tx, evs...); err != nil {
			tb.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestOutboxReadsAhead takes part of a page: the source reads the next
// page while those rows are applied, so the rest of both pages comes
// without another read (here, with the source's database closed).
func TestOutboxReadsAhead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, f *fixture) {
		table := f.newOutbox()
		enqueueKeyed(t, f.s, table, 20, 20)
		s := f.open(t)
		src, err := projector.NewOutboxSource(projector.OutboxConfig{Store: s, Scope: store.Scope{Table: table},
			Projection: "count", ProjectionTable: f.table, PollInterval: 5 * time.Millisecond, PageSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := src.Receive(ctx, 5)
		if err != nil || len(got) != 5 {
			t.Fatalf("first receive: %d rows, %v", len(got), err)
		}
		if err := src.Close(); err != nil { // waits for the read ahead
			t.Fatal(err)
		}
		if err := s.DB().Close(); err != nil {
			t.Fatal(err)
		}
		for len(got) < 20 {
			more, err := src.Receive(ctx, 5)
			if err != nil {
				t.Fatalf("[read ahead] after %d of 20 rows, the next page was not read ahead: %v", len(got), err)
			}
			got = append(got, more...)
		}
		_ = src.Close()
	})
}
