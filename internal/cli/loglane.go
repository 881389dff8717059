package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/daemon"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// printLogNeeds says what the database must provide for the file's log
// lanes (source: log), with its current values.
func (a *app) printLogNeeds(ctx context.Context, rt *daemon.Runtime) {
	var lanes []string
	for _, l := range rt.File.Lanes {
		if relay.Source(l.Source) == relay.SourceLog {
			lanes = append(lanes, l.Name)
		}
	}
	if len(lanes) == 0 {
		return
	}
	lr, ok := rt.Store.(store.LogReader)
	if !ok {
		fmt.Fprintf(a.stdout, "log lanes (%s): this database has no log Herald can read; use source: poll\n", strings.Join(lanes, ", "))
		return
	}
	fmt.Fprintf(a.stdout, "log lanes (%s) need:\n", strings.Join(lanes, ", "))
	for _, line := range lr.LogRequirements(ctx) {
		fmt.Fprintf(a.stdout, "  - %s\n", line)
	}
	if err := lr.CheckLog(ctx); err != nil {
		fmt.Fprintf(a.stdout, "not ready: %v\n", err)
		return
	}
	fmt.Fprintln(a.stdout, "ready for log lanes")
}
