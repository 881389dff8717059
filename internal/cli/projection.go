package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/daemon"
	"github.com/heraldhq/herald/store"
)

// projectionFlags are the flags the projection subcommands share.
type projectionFlags struct {
	table    string
	outbox   string
	asJSON   bool
	dead     bool
	resetSQL []string
}

func (a *app) projectionCommand() *cobra.Command {
	var f projectionFlags
	var rf rebuildFlags
	cmd := &cobra.Command{
		Use:   "projection",
		Short: "Inspect, replay and rebuild projections (the projections in the projection table)",
	}
	cmd.PersistentFlags().StringVar(&f.table, "table", store.DefaultProjectionTable, "projection table")
	status := &cobra.Command{Use: "status", Short: "Per projection: done, failed, dead and lag", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.projectionStatus(cmd.Context(), f) }}
	status.Flags().BoolVar(&f.asJSON, "json", false, "print JSON")
	status.Flags().StringVar(&f.outbox, "outbox", "", "outbox table the projections read, to count the events not yet applied (lag)")
	replay := &cobra.Command{Use: "replay NAME --dead [EVENT_ID...]", Short: "Retry dead events (all, or the ids given)",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.projectionReplay(cmd.Context(), f, args[0], args[1:])
		}}
	replay.Flags().BoolVar(&f.dead, "dead", false, "replay dead events (required: the only kind there is to replay)")
	rebuild := &cobra.Command{Use: "rebuild NAME", Short: "Reset a projection so that it is applied again from the start",
		Long: "Deletes the projection's rows and runs each --reset-sql statement in the same transaction (the reset hook " +
			"that clears the read model). It says what it will delete and asks first (--yes when stdin is not a terminal; " +
			"--dry-run changes nothing); an unknown name exits 2. Stop the projection first; on start, a projector reading the outbox applies every " +
			"event again; one reading a broker must be rewound by the application (Projector.Rebuild).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.projectionRebuild(cmd.Context(), f, rf, args[0])
		}}
	rebuild.Flags().StringArrayVar(&f.resetSQL, "reset-sql", nil, "statement that clears the read model (repeatable)")
	rebuild.Flags().BoolVar(&rf.yes, "yes", false, "do not ask for confirmation (required when stdin is not a terminal)")
	rebuild.Flags().BoolVar(&rf.dryRun, "dry-run", false, "print what would be deleted and run, change nothing")
	cmd.AddCommand(status, replay, rebuild)
	return cmd
}

// projectionStore opens a store as a projection store: --store's, else
// the store of the configured projection named name, else the default.
func (a *app) projectionStore(ctx context.Context, name string) (*daemon.Runtime, store.ProjectionStore, error) {
	all, err := a.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	f, err := a.storeFile(all, "")
	for _, p := range all.Projections {
		if p.Name == name && a.storeName == "" {
			f, err = all.ForStore(p.Store)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if err := daemon.CheckDatabaseExists(f.Store); err != nil {
		return nil, nil, err // opening would create an empty SQLite file
	}
	rt, err := openFile(ctx, f, openBare)
	if err != nil {
		return nil, nil, err
	}
	return rt, rt.Store, nil
}

// projectionStatus is one projection in `projection status --json`.
type projectionStatus struct {
	Name             string  `json:"name"`
	Done             int64   `json:"done"`
	Failed           int64   `json:"failed"`
	Dead             int64   `json:"dead"`
	Processing       int64   `json:"processing"`
	LastAppliedAgo   float64 `json:"last_applied_seconds_ago"`
	OldestFailedSecs float64 `json:"oldest_failed_seconds"`
	// Lag counts outbox events not yet done or dead (--outbox), capped at
	// lagCap; -1 when unknown.
	Lag int64 `json:"lag"`
}

// lagCap bounds the outbox rows counted for the lag.
const lagCap = 10_000

func (a *app) projectionStatus(ctx context.Context, f projectionFlags) error {
	rt, ps, err := a.projectionStore(ctx, "")
	if err != nil {
		return err
	}
	defer rt.Close()
	if cur, _, err := rt.Store.SchemaVersion(ctx, f.table); err == nil && cur == 0 {
		return fmt.Errorf("no projection table %s in this database yet: it is created when a projector first "+
			"runs against it (or pass --table if your projections use another)", f.table)
	}
	stats, err := ps.ProjectionStats(ctx, f.table, "")
	if err != nil {
		return err
	}
	out := make([]projectionStatus, 0, len(stats))
	for _, st := range stats {
		lag, err := a.projectionLag(ctx, ps, f, st.Projection)
		if err != nil {
			return err
		}
		out = append(out, projectionStatus{Name: st.Projection, Done: st.Done, Failed: st.Failed, Dead: st.Dead,
			Processing: st.Processing, LastAppliedAgo: st.LastDoneAge.Seconds(),
			OldestFailedSecs: st.OldestFailedAge.Seconds(), Lag: lag})
	}
	if f.asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"table": f.table, "projections": out})
	}
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PROJECTION\tDONE\tFAILED\tDEAD\tLAG\tLAST APPLIED\tOLDEST FAILED")
	for _, p := range out {
		lag := "-"
		if p.Lag >= lagCap {
			lag = ">=" + strconv.Itoa(lagCap)
		} else if p.Lag >= 0 {
			lag = strconv.FormatInt(p.Lag, 10)
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%s\t%s\n", p.Name, p.Done, p.Failed, p.Dead, lag,
			ago(p.LastAppliedAgo, p.Done), ago(p.OldestFailedSecs, p.Failed))
	}
	return w.Flush()
}

// projectionLag counts the outbox events the projection has not finished.
func (a *app) projectionLag(ctx context.Context, ps store.ProjectionStore, f projectionFlags, name string) (int64, error) {
	if f.outbox == "" {
		return -1, nil
	}
	recs, err := ps.ScanOutbox(ctx, store.OutboxScanParams{Scope: store.Scope{Table: f.outbox},
		ProjectionTable: f.table, Projection: name, Limit: lagCap})
	return int64(len(recs)), err
}

func ago(secs float64, n int64) string {
	if n == 0 {
		return "-"
	}
	return (time.Duration(secs * float64(time.Second))).Round(time.Second).String() + " ago"
}

func (a *app) projectionReplay(ctx context.Context, f projectionFlags, name string, ids []string) error {
	if !f.dead {
		return usagef("projection replay: pass --dead (dead events are what there is to replay)")
	}
	rt, ps, err := a.projectionStore(ctx, name)
	if err != nil {
		return err
	}
	defer rt.Close()
	n, err := ps.ReplayProjection(ctx, f.table, name, ids)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%d dead events of %s replayed; running projectors apply them within their sweep interval\n", n, name)
	return nil
}
