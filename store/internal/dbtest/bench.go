package dbtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// BenchOrdered measures claim + Complete on an ordered lane whose b.N
// events are spread over keys partition keys, in batches of size, and
// reports events/s: the cost of the key-order checks next to storetest.Bench.
func BenchOrdered(b *testing.B, s store.Store, keys, size int) {
	ctx := context.Background()
	table := testenv.Name("herald_bo")
	if err := store.MigrateFor(ctx, s, table, store.TableUse{Ordered: true}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { Drop(s, table) })
	payload := make([]byte, 1024)
	for start := 0; start < b.N; start += 1000 {
		evs := make([]herald.Event, min(1000, b.N-start))
		for i := range evs {
			evs[i] = herald.Event{Topic: "bench", Type: "Bench", Payload: payload,
				PartitionKey: fmt.Sprintf("key-%d", (start+i)%keys)}
		}
		Enqueue(b, s, table, evs...)
	}
	token := rand.Int64()
	p := store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "bench", Token: token,
		Lease: time.Minute, Limit: size, Ordered: true}
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		recs, err := s.Claim(ctx, p)
		if err != nil || len(recs) == 0 {
			b.Fatalf("claim after %d of %d: %d rows, %v", done, b.N, len(recs), err)
		}
		ds := make([]store.Delivery, len(recs))
		for i, r := range recs {
			ds[i] = store.Delivery{ID: r.ID}
		}
		if lost, err := s.Complete(ctx, store.Fence{Table: table, Token: token}, ds); err != nil || len(lost) > 0 {
			b.Fatalf("complete: lost %v, %v", lost, err)
		}
		done += len(recs)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}
