package cli

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/heraldhq/herald/store"
)

// rebuildFlags are `projection rebuild`'s own flags.
type rebuildFlags struct {
	yes, dryRun bool
}

// projectionRebuild deletes a projection's ledger rows (and runs the reset
// statements) after checking that the name is known, saying what it will
// delete and asking: a rebuild cannot be undone.
func (a *app) projectionRebuild(ctx context.Context, f projectionFlags, rf rebuildFlags, name string) error {
	rt, ps, err := a.projectionStore(ctx, name)
	if err != nil {
		return err
	}
	defer rt.Close()
	st, err := a.knownProjection(ctx, ps, f.table, name)
	if err != nil {
		return err
	}
	total := st.Processing + st.Failed + st.Done + st.Dead
	what := fmt.Sprintf("delete %d ledger row(s) of projection %s in %s (done %d, failed %d, dead %d, processing %d)",
		total, name, f.table, st.Done, st.Failed, st.Dead, st.Processing)
	if len(f.resetSQL) == 0 {
		fmt.Fprintf(a.stderr, "warning: no --reset-sql given: the read model keeps its rows while the ledger is emptied, "+
			"so every event is applied on top of what is there (pass the statements that clear it, e.g. --reset-sql 'DELETE FROM my_view')\n")
	}
	if rf.dryRun {
		fmt.Fprintf(a.stdout, "would %s and run %d reset statement(s)\n", what, len(f.resetSQL))
		for _, q := range f.resetSQL {
			fmt.Fprintf(a.stdout, "  %s\n", q)
		}
		return nil
	}
	if !rf.yes {
		if !interactive(stdinOr()) {
			return usagef("projection rebuild: stdin is not a terminal, so there is no one to ask: pass --yes to %s", what)
		}
		if err := a.confirm(what + "?"); err != nil {
			return err
		}
	}
	n, err := ps.ResetProjection(ctx, f.table, name, func(tx *sql.Tx) error {
		for _, q := range f.resetSQL {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("--reset-sql %q: %w", q, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "projection %s reset: %d rows deleted, %d reset statements run\n", name, n, len(f.resetSQL))
	return nil
}

// knownProjection returns name's counts, or a usage error when name is
// neither configured nor in the ledger table: a typo must not report
// "0 rows deleted" as if it had done something.
func (a *app) knownProjection(ctx context.Context, ps store.ProjectionStore, table, name string) (store.ProjectionStats, error) {
	all, err := ps.ProjectionStats(ctx, table, "")
	if err != nil {
		return store.ProjectionStats{}, err
	}
	known := map[string]bool{}
	for _, st := range all {
		if st.Projection == name {
			return st, nil
		}
		known[st.Projection] = true
	}
	if cfg, err := a.loadConfig(); err == nil {
		for _, p := range cfg.Projections {
			if p.Name == name {
				return store.ProjectionStats{Projection: name}, nil
			}
			known[p.Name] = true
		}
	}
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names)
	list := "none"
	if len(names) > 0 {
		list = strings.Join(names, ", ")
	}
	return store.ProjectionStats{}, usagef("no projection %q: it is not configured and has no rows in %s (known: %s)",
		name, table, list)
}

// interactive reports whether r is a terminal someone can answer at. A
// reader that is not a file (a test's answer) counts as one.
func interactive(r io.Reader) bool {
	if f, ok := r.(*os.File); ok {
		st, err := f.Stat()
		return err == nil && st.Mode()&os.ModeCharDevice != 0
	}
	return true
}
