package storetest

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// testApplyStatements applies batches given as statements
// (store.StatementApplier, which every store of this repo is): a new
// batch whose second statement the server refuses commits the first event
// only, reports the second failed with the statement's name and leaves the
// third unrun; an error from the statements function is its event's
// failure; a batch meeting a done row applies the others once.
func testApplyStatements(t *testing.T, h *projHarness) {
	sa, ok := h.ps.(store.StatementApplier)
	if !ok {
		t.Skipf("%T applies no statements", h.ps)
	}
	ins := "INSERT INTO " + h.model + " (k, n) VALUES (" + h.bind(1) + ", " + h.bind(2) + ")"
	row := func(k string, n any, name string) []store.Stmt {
		return []store.Stmt{{SQL: ins, Args: []any{k, n}, Name: name}}
	}
	params := func(keys ...store.ProjectionKey) []store.ApplyParams {
		ps := make([]store.ApplyParams, len(keys))
		for i, k := range keys {
			ps[i] = store.ApplyParams{ProjectionKey: k, Lease: time.Minute}
		}
		return ps
	}
	check := func(step string, res []store.ApplyResult, err error, want ...store.Outcome) {
		t.Helper()
		if err != nil || len(res) != len(want) {
			t.Fatalf("[%s] ApplyStatements = %+v, %v", step, res, err)
		}
		for i, r := range res {
			if r.Outcome != want[i] {
				errorf(t, step, "item %d: outcome %d, want %d", i, r.Outcome, want[i])
			}
		}
	}
	a, bad, c := h.key(herald.NewID()), h.key(herald.NewID()), h.key(herald.NewID())
	stmts := [][]store.Stmt{row("sa", 1, ""), row("sbad", nil, "statement bad"), row("sc", 1, "")}
	res, err := sa.ApplyStatements(h.ctx, params(a, bad, c), func(i int) ([]store.Stmt, error) { return stmts[i], nil })
	check("refused statement", res, err, store.Applied, store.HandlerFailed, store.NotRun)
	if len(res) == 3 && (!errors.Is(res[1].Err, store.ErrHandler) || !strings.Contains(res[1].Err.Error(), "statement bad: ")) {
		errorf(t, "refused statement", "Err = %v, want a handler error naming the statement", res[1].Err)
	}
	if h.count("sa") != 1 || h.count("sc") != 0 {
		errorf(t, "refused statement", "read model sa=%d sc=%d, want 1 and 0", h.count("sa"), h.count("sc"))
	}
	for k, want := range map[store.ProjectionKey]store.Outcome{a: store.Finished, bad: store.Applied, c: store.Applied} {
		if r, err := h.apply(k, func(*sql.Tx) error { return nil }); err != nil || r.Outcome != want {
			errorf(t, "refused statement", "event %s afterwards: %+v, %v; want outcome %d", k.EventID, r, err, want)
		}
	}

	d, e := h.key(herald.NewID()), h.key(herald.NewID())
	res, err = sa.ApplyStatements(h.ctx, params(d, e), func(i int) ([]store.Stmt, error) {
		if i == 1 {
			return nil, errors.New("no such path")
		}
		return row("sd", 1, ""), nil
	})
	check("statements error", res, err, store.Applied, store.HandlerFailed)
	if len(res) == 2 && !strings.Contains(fmtErr(res[1].Err), "no such path") {
		errorf(t, "statements error", "Err = %v, want the function's error", res[1].Err)
	}

	f := h.key(herald.NewID())
	res, err = sa.ApplyStatements(h.ctx, params(a, f), func(i int) ([]store.Stmt, error) { return row("sf", 1, ""), nil })
	check("seen event", res, err, store.Finished, store.Applied)
	if h.count("sf") != 1 {
		errorf(t, "seen event", "read model sf=%d, want 1", h.count("sf"))
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
