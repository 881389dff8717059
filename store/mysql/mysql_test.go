package mysql_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/dbtest"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open returns a store on the test server and a migrated fresh table.
func open(t *testing.T) (*mysql.Store, string) {
	t.Helper()
	s := openStore(t)
	table := testenv.Name("herald_my")
	if err := s.Migrate(context.Background(), table); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	t.Cleanup(func() {
		_, _ = s.DB().Exec("DROP TABLE IF EXISTS `" + table + "`")
		_, _ = s.DB().Exec("DELETE FROM herald_migrations WHERE table_name = ?", table)
	})
	return s, table
}

func openStore(t testing.TB) *mysql.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := mysql.Open(ctx, testenv.MySQLDSN(), mysql.Options{})
	if err != nil {
		testenv.Unreachable(t, "MySQL/MariaDB", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func enqueue(t *testing.T, s store.Store, table string, evs ...herald.Event) {
	t.Helper()
	ob, err := herald.NewOutbox(herald.OutboxConfig{Dialect: s.Dialect(), Table: table})
	if err != nil {
		t.Fatal(err)
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
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) store.Store { return openStore(tb) })
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(tb testing.TB) store.Store { return openStore(tb) })
}

// BenchmarkOrdered is claim + Complete on an ordered lane with many keys,
// next to BenchmarkStore's unordered figures.
func BenchmarkOrdered(b *testing.B) {
	for _, keys := range []int{10, 10000} {
		b.Run(fmt.Sprintf("keys=%d/batch=100", keys), func(b *testing.B) {
			dbtest.BenchOrdered(b, openStore(b), keys, 100)
		})
	}
}

func TestClaimComplete(t *testing.T) {
	s, table := open(t)
	ctx := context.Background()
	enqueue(t, s, table,
		herald.Event{Topic: "t", Type: "A", Payload: []byte("1"), Headers: map[string]string{"h": "v"}},
		herald.Event{Topic: "t", Type: "B", Payload: []byte("2")})
	recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w1", Token: 7, Lease: time.Minute, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Attempts != 1 || recs[0].Event.Headers["h"] != "v" || recs[0].Status != store.StatusInFlight {
		t.Fatalf("claimed %+v", recs)
	}
	again, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w2", Token: 8, Lease: time.Minute, Limit: 10})
	if err != nil || len(again) != 0 {
		t.Fatalf("second claim got %d rows, %v", len(again), err)
	}
	lost, err := s.Complete(ctx, store.Fence{Table: table, Token: 8}, []store.Delivery{{ID: recs[0].ID}, {ID: recs[1].ID}})
	if err != nil || len(lost) != 2 {
		t.Fatalf("complete with a wrong token: lost %v, %v", lost, err)
	}
	lost, err = s.Complete(ctx, store.Fence{Table: table, Token: 7}, []store.Delivery{{ID: recs[0].ID, Receipt: store.Receipt{Stream: "S", Sequence: 3}}, {ID: recs[1].ID}})
	if err != nil || len(lost) != 0 {
		t.Fatalf("complete: lost %v, %v", lost, err)
	}
	st, err := s.Stats(ctx, store.Scope{Table: table})
	if err != nil || st.Delivered != 2 {
		t.Fatalf("stats %+v, %v", st, err)
	}
	r, err := s.Get(ctx, table, recs[0].Event.ID)
	if err != nil || r.Receipt.Sequence != 3 || r.DeliveredAt.IsZero() {
		t.Fatalf("get %+v, %v", r, err)
	}
}
