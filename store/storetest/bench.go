package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// Bench measures the relay's hot path, claim + Complete, with batches of
// 1, 100 and 1000 rows (the claim's Limit) of 1 KiB events, then four
// workers on one store claiming batches of 100, and reports events/s. open
// is as for Run; the benchmark calls it once per case.
func Bench(b *testing.B, open Opener) {
	for _, size := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("ClaimComplete/batch=%d", size), func(b *testing.B) {
			benchClaimComplete(b, open(b), size)
		})
	}
	b.Run("ClaimCompleteParallel/workers=4/batch=100", func(b *testing.B) {
		BenchParallel(b, open(b), 4, 100)
	})
}

func benchClaimComplete(b *testing.B, s store.Store, size int) {
	ctx := context.Background()
	table := randomName("herald_b")
	if err := s.Migrate(ctx, table); err != nil {
		b.Fatal(err)
	}
	fill(b, s, table, b.N)
	c := newClaimer("bench")
	p := store.ClaimParams{Scope: store.Scope{Table: table}, Owner: c.owner, Token: c.token,
		Lease: time.Minute, Limit: size}
	f := store.Fence{Table: table, Token: c.token}
	ds := make([]store.Delivery, 0, size)
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		recs, err := s.Claim(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		if len(recs) == 0 {
			b.Fatalf("claimed nothing after %d of %d events", done, b.N)
		}
		ds = ds[:0]
		for _, r := range recs {
			ds = append(ds, store.Delivery{ID: r.ID})
		}
		if lost, err := s.Complete(ctx, f, ds); err != nil || len(lost) > 0 {
			b.Fatalf("complete: lost %v err %v", lost, err)
		}
		done += len(recs)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// fill enqueues n events of 1 KiB in transactions of 1000.
func fill(b *testing.B, s store.Store, table string, n int) {
	ctx := context.Background()
	ob, err := herald.NewOutbox(herald.OutboxConfig{Dialect: s.Dialect(), Table: table})
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 1024)
	for start := 0; start < n; start += 1000 {
		evs := make([]herald.Event, min(1000, n-start))
		for i := range evs {
			evs[i] = herald.Event{ID: herald.NewID(), Topic: "bench", Type: "Bench", Payload: payload}
		}
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := ob.Enqueue(ctx, tx, evs...); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchParallel measures claim + Complete by workers goroutines sharing s,
// each claiming batches of size, and reports events/s.
func BenchParallel(b *testing.B, s store.Store, workers, size int) {
	ctx := context.Background()
	table := randomName("herald_b")
	if err := s.Migrate(ctx, table); err != nil {
		b.Fatal(err)
	}
	fill(b, s, table, b.N)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			c := newClaimer(fmt.Sprintf("bench-%d", w))
			p := store.ClaimParams{Scope: store.Scope{Table: table}, Owner: c.owner, Token: c.token,
				Lease: time.Minute, Limit: size}
			f := store.Fence{Table: table, Token: c.token}
			for {
				recs, err := s.Claim(ctx, p)
				if err != nil || len(recs) == 0 {
					if err != nil {
						b.Error(err)
					}
					return
				}
				ds := make([]store.Delivery, len(recs))
				for i, r := range recs {
					ds[i] = store.Delivery{ID: r.ID}
				}
				if lost, err := s.Complete(ctx, f, ds); err != nil || len(lost) > 0 {
					b.Errorf("complete: lost %v err %v", lost, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}
