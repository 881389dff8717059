package kinesis

import (
	"context"
	"testing"

	"github.com/heraldhq/herald/projector/projectortest"
)

// Rule: the lease table works on every database Herald keeps projections
// in: created twice without harm, a shard added twice is one row, a lease
// is taken only as last seen, renewed only by its owner (with the
// checkpoint), given up with its checkpoint, and reset.
func TestLeasesOnEveryDatabase(t *testing.T) {
	for _, b := range projectortest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			s := b.Open(t)(t)
			ctx := context.Background()
			l := &leaseStore{db: s.DB(), dialect: s.Dialect(), table: DefaultShardTable,
				stream: projectortest.Name("stream"), group: "g"}
			for range 2 {
				if err := l.migrate(ctx); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { _ = l.reset(context.Background()) })
			for range 2 {
				if err := l.add(ctx, "shard-1", []string{"shard-0"}, nil); err != nil {
					t.Fatalf("add: %v", err)
				}
			}
			rows, err := l.all(ctx)
			r := rows["shard-1"]
			if err != nil || len(rows) != 1 || r.owner != "" || len(r.parents) != 1 || r.parents[0] != "shard-0" {
				t.Fatalf("rows %+v, %v", rows, err)
			}
			if ok, err := l.take(ctx, r, "a"); !ok || err != nil {
				t.Fatalf("take a free lease: %v %v", ok, err)
			}
			if ok, _ := l.take(ctx, r, "b"); ok {
				t.Fatal("took a lease no longer as last seen")
			}
			if ok, err := l.renew(ctx, "shard-1", "a", "49590"); !ok || err != nil {
				t.Fatalf("renew by its owner: %v %v", ok, err)
			}
			if ok, _ := l.renew(ctx, "shard-1", "b", ""); ok {
				t.Fatal("renewed by another")
			}
			if err := l.release(ctx, "shard-1", "a", ShardEnd); err != nil {
				t.Fatal(err)
			}
			rows, _ = l.all(ctx)
			if r := rows["shard-1"]; r.owner != "" || r.checkpoint != ShardEnd || r.counter != 3 {
				t.Fatalf("after release: %+v", r)
			}
			if err := l.reset(ctx); err != nil {
				t.Fatal(err)
			}
			if rows, _ := l.all(ctx); len(rows) != 0 {
				t.Fatalf("after reset: %+v", rows)
			}
		})
	}
}
