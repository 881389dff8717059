package projector_test

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/projector/projectortest"
	"github.com/heraldhq/herald/store"
)

// Each segment of BenchmarkApplyBesideLedger: every worker applies this
// many transactions of ledgerBatch events, Herald's then the ledger's (or
// the other way round, every other segment).
const (
	ledgerWorkers = 8
	ledgerBatch   = 32
	segmentTxs    = 4
)

// BenchmarkApplyBesideLedger runs Herald's batch apply and a minimal
// exactly-once ledger (per transaction one multi-row INSERT of the event
// ids with duplicates ignored, then the handler for each new event; no
// tenant, lease, attempts or state index) in short alternating segments in
// one process, 8 workers × 32 events per transaction, the same counting
// handler on its own model table for each. Alternating segments of a
// fraction of a second cancel most of a shared machine's drift, which
// whole runs one after another do not. It reports both rates and the
// median of the per-segment ratios (Herald ÷ ledger).
func BenchmarkApplyBesideLedger(b *testing.B) {
	for _, be := range projectortest.Backends() {
		if be.Name == "sqlite" {
			continue // one writer at a time: 8 workers measure the lock
		}
		b.Run(be.Name, func(b *testing.B) {
			s := be.Open(b)(b)
			herald, ledger := newHeraldSide(b, s), newLedgerSide(b, s)
			seg := ledgerWorkers * ledgerBatch * segmentTxs
			segments := max(1, b.N/seg)
			var hTime, lTime time.Duration
			var ratios []float64
			b.ResetTimer()
			for i := range segments {
				first, second := herald, ledger
				if i%2 == 1 {
					first, second = ledger, herald
				}
				t1, t2 := first.segment(b, i), second.segment(b, i)
				h, l := t1, t2
				if i%2 == 1 {
					h, l = t2, t1
				}
				hTime, lTime = hTime+h, lTime+l
				ratios = append(ratios, l.Seconds()/h.Seconds())
			}
			sort.Float64s(ratios)
			n := float64(segments * seg)
			b.ReportMetric(n/hTime.Seconds(), "herald-events/s")
			b.ReportMetric(n/lTime.Seconds(), "ledger-events/s")
			b.ReportMetric(ratios[len(ratios)/2], "herald/ledger")
		})
	}
}

// side is one of the two appliers: apply runs one transaction of events.
type side struct {
	apply func(ctx context.Context, evs []herald.Event) error
}

// segment applies segmentTxs transactions per worker, each worker on its
// own keys (as the projector's shards are), and returns the time taken.
func (sd side) segment(b *testing.B, i int) time.Duration {
	ctx := context.Background()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range ledgerWorkers {
		wg.Go(func() {
			for t := range segmentTxs {
				evs := make([]herald.Event, ledgerBatch)
				for j := range evs {
					key := fmt.Sprintf("k%d-%d", w, (t*ledgerBatch+j)%125) // 125 keys per worker, 1,000 in all
					evs[j] = projectortest.Event(key, int64(i))
				}
				if err := sd.apply(ctx, evs); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// newHeraldSide applies through the store's ApplyBatch, every guarantee on.
func newHeraldSide(b *testing.B, s projectortest.Store) side {
	model := projectortest.NewModel(b, s)
	table := projectortest.Name("herald_pe")
	if err := s.MigrateProjections(context.Background(), table); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = s.DB().Exec("DROP TABLE " + table) })
	return side{apply: func(ctx context.Context, evs []herald.Event) error {
		ps := make([]store.ApplyParams, len(evs))
		for i, ev := range evs {
			ps[i] = store.ApplyParams{ProjectionKey: store.ProjectionKey{Table: table, Projection: "bench", EventID: ev.ID}, Lease: time.Minute}
		}
		res, err := s.ApplyBatch(ctx, ps, func(tx *sql.Tx, i int) error { return model.Bump(ctx, tx, evs[i]) })
		for i := range res {
			if err == nil && res[i].Outcome != store.Applied {
				err = fmt.Errorf("event %d: outcome %v", i, res[i].Outcome)
			}
		}
		return err
	}}
}

// newLedgerSide is the minimal ledger: no tenant, lease, attempts, error,
// times or second index; the database's default isolation; a lost
// deadlock is run again.
func newLedgerSide(b *testing.B, s projectortest.Store) side {
	model := projectortest.NewModel(b, s)
	table := projectortest.Name("herald_ml")
	db, pg := s.DB(), s.Dialect().Name == "postgres"
	ddl := "CREATE TABLE " + table + " (projection VARCHAR(64) NOT NULL, event_id VARCHAR(64) NOT NULL, " +
		"state VARCHAR(16) NOT NULL, PRIMARY KEY (projection, event_id))"
	if _, err := db.Exec(ddl); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + table) })
	record := func(ctx context.Context, tx *sql.Tx, evs []herald.Event) (map[string]bool, error) {
		vals, args := make([]string, len(evs)), make([]any, len(evs))
		for i, ev := range evs {
			vals[i], args[i] = "('bench', ?, 'done')", ev.ID
			if pg {
				vals[i] = fmt.Sprintf("('bench', $%d, 'done')", i+1)
			}
		}
		q := "INSERT INTO " + table + " (projection, event_id, state) VALUES " + strings.Join(vals, ", ")
		fresh := map[string]bool{}
		if !pg {
			_, err := tx.ExecContext(ctx, "INSERT IGNORE"+strings.TrimPrefix(q, "INSERT"), args...)
			for _, ev := range evs {
				fresh[ev.ID] = true // fresh ids: none can exist
			}
			return fresh, err
		}
		rows, err := tx.QueryContext(ctx, q+" ON CONFLICT DO NOTHING RETURNING event_id", args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return nil, err
			}
			fresh[id] = true
		}
		return fresh, rows.Err()
	}
	once := func(ctx context.Context, evs []herald.Event) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // a no-op after Commit
		fresh, err := record(ctx, tx, evs)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if fresh[ev.ID] {
				if err := model.Bump(ctx, tx, ev); err != nil {
					return err
				}
			}
		}
		return tx.Commit()
	}
	return side{apply: func(ctx context.Context, evs []herald.Event) error {
		for {
			err := once(ctx, evs)
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), "deadlock") {
				return err
			}
		}
	}}
}
