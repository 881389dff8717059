package projector_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/projector/projectortest"
	"github.com/heraldhq/herald/store"
)

// BenchmarkApply measures the exactly-once step alone: claim, counting
// handler and done mark in one transaction, with 1 and 8 concurrent
// workers on distinct events, one event or 32 per transaction. It reports
// events/s.
func BenchmarkApply(b *testing.B) {
	for _, be := range projectortest.Backends() {
		for _, c := range []struct{ workers, batch int }{{1, 1}, {8, 1}, {1, 32}, {8, 32}} {
			workers, batch := c.workers, c.batch
			b.Run(fmt.Sprintf("%s/workers=%d/batch=%d", be.Name, workers, batch), func(b *testing.B) {
				open := be.Open(b)
				s := open(b)
				model := projectortest.NewModel(b, s)
				table := projectortest.Name("herald_pe")
				if err := s.MigrateProjections(context.Background(), table); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _, _ = s.DB().Exec("DROP TABLE " + table) })
				// 1,000 keys, as many as the minimal ledger's read model has
				// rows: with 100, the 8 workers got 13 or 12 keys each, and
				// every run ended on four of them.
				evs := make([]herald.Event, b.N)
				for i := range evs {
					evs[i] = projectortest.Event(fmt.Sprintf("k%d", i%benchKeys), int64(i))
				}
				// Each worker gets its own keys, as the projector's lanes do.
				lanes := make([]chan herald.Event, workers)
				for w := range lanes {
					lanes[w] = make(chan herald.Event, b.N)
				}
				for i, ev := range evs {
					lanes[(i%benchKeys)%workers] <- ev
				}
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for _, lane := range lanes {
					close(lane)
					wg.Go(func() { applyAll(b, s, table, model, lane, batch) })
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
			})
		}
	}
}

// benchKeys is how many read-model keys BenchmarkApply's events bump.
const benchKeys = 1000

// BenchmarkOutboxProjection measures a projector (8 workers) fed by the
// outbox-scan source, from the first scan to the last event applied.
func BenchmarkOutboxProjection(b *testing.B) {
	for _, be := range projectortest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			open := be.Open(b)
			s := open(b)
			model := projectortest.NewModel(b, s)
			table := projectortest.Name("herald_pe")
			if err := s.MigrateProjections(context.Background(), table); err != nil {
				b.Fatal(err)
			}
			outbox := projectortest.Name("herald_ob")
			if err := s.Migrate(context.Background(), outbox); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				_, _ = s.DB().Exec("DROP TABLE " + table)
				_, _ = s.DB().Exec("DROP TABLE " + outbox)
			})
			enqueueKeyed(b, s, outbox, b.N, 100)
			p, err := projector.New(projector.Config{Store: open(b), Handler: model.Bump,
				Settings: projector.Settings{Name: "count", Table: table, Workers: 8, BatchSize: 256, ApplyBatch: benchApplyBatch()}})
			if err != nil {
				b.Fatal(err)
			}
			src, err := projector.NewOutboxSource(projector.OutboxConfig{Store: open(b), Scope: store.Scope{Table: outbox},
				Projection: "count", ProjectionTable: table, PollInterval: time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = p.Run(ctx, src) }()
			for model.Total(b, s.DB()) < int64(b.N) {
				time.Sleep(2 * time.Millisecond)
			}
			elapsed := time.Since(start)
			cancel()
			<-done
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
		})
	}
}

// benchApplyBatch reads HERALD_BENCH_APPLY_BATCH, for comparing batch sizes.
func benchApplyBatch() int {
	n, _ := strconv.Atoi(os.Getenv("HERALD_BENCH_APPLY_BATCH"))
	return n
}

// applyAll applies the events from next, batch at a time.
func applyAll(b *testing.B, s projectortest.Store, table string, model *projectortest.Model, next <-chan herald.Event, batch int) {
	ctx := context.Background()
	for {
		var evs []herald.Event
		for ev := range next {
			evs = append(evs, ev)
			if len(evs) == batch {
				break
			}
		}
		if len(evs) == 0 {
			return
		}
		ps := make([]store.ApplyParams, len(evs))
		for i, ev := range evs {
			ps[i] = store.ApplyParams{ProjectionKey: store.ProjectionKey{Table: table, Projection: "bench", EventID: ev.ID}, Lease: time.Minute}
		}
		var err error
		if batch == 1 {
			_, err = s.Apply(ctx, ps[0], func(tx *sql.Tx) error { return model.Bump(ctx, tx, evs[0]) })
		} else {
			_, err = s.ApplyBatch(ctx, ps, func(tx *sql.Tx, i int) error { return model.Bump(ctx, tx, evs[i]) })
		}
		if err != nil {
			b.Error(err)
			return
		}
	}
}
