package mysql_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/dbtest"
	"github.com/heraldhq/herald/store/mysql"
)

// BenchmarkSchemaVersions compares the relay's store work (Claim, then a
// mark delivered with a receipt per row) on a table at the previous schema
// version, marked as that version's build did (previousComplete), and on a
// table at the latest version (Complete), batch by batch in turns (which
// table goes first alternates), so that both see the same machine load.
// Each iteration is one batch of 1,000 rows of 1 KiB on each table. It
// reports events/s for each and their ratio. Run with -benchtime 20x or so.
func BenchmarkSchemaVersions(b *testing.B) {
	const batch = 1000
	ctx := context.Background()
	s := openStore(b)
	old, latest := testenv.Name("herald_vp"), testenv.Name("herald_vn")
	_, last, err := s.SchemaVersion(ctx, latest)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.MigrateTo(ctx, old, last-1); err != nil {
		b.Fatal(err)
	}
	if err := s.Migrate(ctx, latest); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dbtest.Drop(s, old); dbtest.Drop(s, latest) })
	for _, t := range []string{old, latest} {
		fillRows(b, s, t, b.N*batch)
	}
	spent := map[string]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		tables := []string{old, latest}
		if i%2 == 1 {
			tables = []string{latest, old}
		}
		for _, t := range tables {
			start := time.Now()
			claimComplete(ctx, b, s, t, int64(i+1), batch, t == old)
			spent[t] += time.Since(start)
		}
	}
	rate := func(t string) float64 { return float64(b.N*batch) / spent[t].Seconds() }
	b.ReportMetric(rate(old), "previous_events/s")
	b.ReportMetric(rate(latest), "latest_events/s")
	b.ReportMetric(rate(latest)/rate(old), "latest/previous")
}

// claimComplete claims one batch of table's default lane and completes it
// (as the previous version's build did, if previous).
func claimComplete(ctx context.Context, b *testing.B, s *mysql.Store, table string, token int64, batch int, previous bool) {
	recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "bench/w1", Token: token,
		Lease: time.Minute, Limit: batch})
	if err != nil || len(recs) != batch {
		b.Fatalf("claim from %s: %d rows, %v", table, len(recs), err)
	}
	ds := make([]store.Delivery, len(recs))
	for i, r := range recs {
		ds[i] = store.Delivery{ID: r.ID, Receipt: store.Receipt{Stream: "BENCH", Sequence: uint64(r.ID)}}
	}
	if previous {
		previousComplete(ctx, b, s, table, token, ds)
		return
	}
	if lost, err := s.Complete(ctx, store.Fence{Table: table, Token: token}, ds); err != nil || len(lost) > 0 {
		b.Fatalf("complete in %s: lost %v, %v", table, lost, err)
	}
}

// previousComplete is Complete as schema version 2's build ran it: it set
// delivered_at and receipt, both NULL until then.
func previousComplete(ctx context.Context, b *testing.B, s *mysql.Store, table string, token int64, ds []store.Delivery) {
	var cases strings.Builder
	args := make([]any, 0, 3*len(ds)+1)
	for _, d := range ds {
		cases.WriteString(" WHEN ? THEN ?")
		args = append(args, d.ID, d.Receipt.JSON())
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(ds)), ", ")
	for _, d := range ds {
		args = append(args, d.ID)
	}
	res, err := s.DB().ExecContext(ctx, "UPDATE `"+table+"` FORCE INDEX (PRIMARY) SET status = 'delivered', delivered_at = UTC_TIMESTAMP(6),"+
		" available_at = UTC_TIMESTAMP(6), receipt = CASE id"+cases.String()+" END WHERE id IN ("+marks+
		") AND lease_token = ? AND status = 'in_flight'", append(args, token)...)
	if err != nil {
		b.Fatalf("previous complete in %s: %v", table, err)
	}
	if n, _ := res.RowsAffected(); int(n) != len(ds) {
		b.Fatalf("previous complete in %s: %d of %d rows", table, n, len(ds))
	}
}

// fillRows inserts n pending rows of 1 KiB into table, 1,000 per statement.
func fillRows(b *testing.B, s *mysql.Store, table string, n int) {
	payload := strings.Repeat("x", 1024)
	for done := 0; done < n; done += 1000 {
		k := min(1000, n-done)
		args := make([]any, 0, 2*k)
		for i := range k {
			args = append(args, fmt.Sprintf("e%d", done+i), payload)
		}
		q := "INSERT INTO `" + table + "` (event_id, topic, event_type, payload) VALUES " +
			strings.TrimSuffix(strings.Repeat("(?, 'bench', 'Bench', ?), ", k), ", ")
		if _, err := s.DB().Exec(q, args...); err != nil {
			b.Fatal(err)
		}
	}
}
