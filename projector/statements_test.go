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
	"github.com/heraldhq/herald/store"
)

// TestStatementsMadeOncePerEvent: a projection that gives its statements
// (Config.Statements) has them made once per event, when the event is
// routed, and sent as they are, also in batches of one: the handler, which
// would make them again, is not called.
func TestStatementsMadeOncePerEvent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, f *fixture) {
		var made, handled atomic.Int32
		cfg := f.config(func(context.Context, *sql.Tx, herald.Event) error {
			handled.Add(1)
			return errors.New("the handler ran")
		})
		insert := f.s.Dialect().Rebind("INSERT INTO " + f.model.Table + " (k, seq) VALUES (?, ?)")
		cfg.Statements = func(ev herald.Event) ([]store.Stmt, error) {
			return []store.Stmt{{SQL: insert, Args: []any{"once", int64(made.Add(1))}}}, nil
		}
		cfg.ApplyBatch = 1
		p, err := projector.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		const n = 5
		var evs []herald.Event
		for i := range n {
			ev := projectortest.Event("once", int64(i))
			ev.PartitionKey = "" // keyless: routed by the statements' row
			evs = append(evs, ev)
		}
		src := newSliceSource(evs...)
		defer run(t, p, src)()
		src.WaitAcks(t, n)
		if got := f.model.Count(t, f.s.DB(), "once"); got != n || made.Load() != n || handled.Load() != 0 {
			t.Fatalf("counted %d, statements made %d times, handler called %d times; want %d, %d, 0",
				got, made.Load(), handled.Load(), n, n)
		}
	})
}
