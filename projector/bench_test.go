package projector_test

import (
	"context"
	"database/sql"
	"fmt"
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
// workers on distinct events. It reports events/s.
func BenchmarkApply(b *testing.B) {
	for _, be := range projectortest.Backends() {
		for _, workers := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/workers=%d", be.Name, workers), func(b *testing.B) {
				open := be.Open(b)
				s := open(b)
				model := projectortest.NewModel(b, s)
				table := projectortest.Name("herald_pe")
				if err := s.MigrateProjections(context.Background(), table); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _, _ = s.DB().Exec("DROP TABLE " + table) })
				evs := make([]herald.Event, b.N)
				for i := range evs {
					evs[i] = projectortest.Event(fmt.Sprintf("k%d", i%100), int64(i))
				}
				next := make(chan herald.Event, b.N)
				for _, ev := range evs {
					next <- ev
				}
				close(next)
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for range workers {
					wg.Go(func() {
						for ev := range next {
							k := store.ProjectionKey{Table: table, Projection: "bench", EventID: ev.ID}
							_, err := s.Apply(context.Background(), store.ApplyParams{ProjectionKey: k, Lease: time.Minute},
								func(tx *sql.Tx) error { return model.Bump(context.Background(), tx, ev) })
							if err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
			})
		}
	}
}

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
			p, err := projector.New(projector.Config{Name: "count", Store: open(b), Table: table, Handler: model.Bump,
				Workers: 8, BatchSize: 256})
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
