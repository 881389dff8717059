package projector_test

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/projector/projectortest"
)

// TestTypeFilters: with IncludeTypes [Counted, Other] and ExcludeTypes
// [Other], only Counted events are applied; the foreign ones are acked
// without a handler call and leave no projection row.
func TestTypeFilters(t *testing.T) {
	forEachBackend(t, func(t *testing.T, f *fixture) {
		var evs []herald.Event
		for i, typ := range []string{"Counted", "Other", "Foreign", "Counted", "Foreign", "Counted"} {
			ev := projectortest.Event("filtered", int64(i+1))
			ev.Type = typ
			evs = append(evs, ev)
		}
		var calls atomic.Int32
		cfg := f.config(func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
			calls.Add(1)
			return f.model.Bump(ctx, tx, ev)
		})
		cfg.IncludeTypes, cfg.ExcludeTypes = []string{"Counted", "Other"}, []string{"Other"}
		p, err := projector.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		src := newSliceSource(evs...)
		stop := run(t, p, src)
		src.WaitAcks(t, len(evs))
		stop()
		if n := f.model.Count(t, f.s.DB(), "filtered"); n != 3 || calls.Load() != 3 {
			t.Errorf("[only included] counted %d with %d handler calls, want 3 and 3", n, calls.Load())
		}
		st, err := f.s.ProjectionStats(context.Background(), f.table, "count")
		if err != nil || len(st) != 1 || st[0].Done != 3 || st[0].Failed+st[0].Dead+st[0].Processing != 0 {
			t.Errorf("[no foreign rows] stats %+v, %v; want 3 done and nothing else", st, err)
		}
	})
}

// TestTypeFiltersRefuseEmpty: an empty type in a filter is a config error.
func TestTypeFiltersRefuseEmpty(t *testing.T) {
	_, err := projector.New(projector.Config{Settings: projector.Settings{Name: "x", ExcludeTypes: []string{"A", ""}},
		Store:   projectortest.SQLite(t.TempDir() + "/f.db")(t),
		Handler: func(context.Context, *sql.Tx, herald.Event) error { return nil }})
	if !errors.Is(err, projector.ErrConfig) {
		t.Fatalf("got %v, want ErrConfig", err)
	}
}
