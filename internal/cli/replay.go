package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"os/user"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/admin"
	"github.com/heraldhq/herald/store"
)

// replayFlags select and pace `herald replay`.
type replayFlags struct {
	lane, tenant  string
	statuses      []string
	types, keys   []string
	since, until  string
	all, dryRun   bool
	yes, asJSON   bool
	sample, batch int
	rate          float64
	by, reason    string
	wait          time.Duration
}

func (a *app) replayCommand() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay [EVENT_ID...]",
		Short: "Publish delivered or dead events again, selected by query (keeps their event ids)",
		Long: `Replay puts finished events back to pending, so the relay publishes them again with
their original event ids (consumers dedupe them) and, on ordered lanes, in their key's order.
Select by lane, state, type, tenant, key, creation time and event id; --dry-run counts and shows
a sample; --rate paces the replay; each replayed event's history records who replayed it.
Each replay is published under a dedupe id of its own (NATS Nats-Msg-Id EVENT_ID/replay-N), so a
broker's duplicate window does not drop it, while ce-id stays the event id. It then waits up to
--wait for the relay and reports how many were published, how many the broker dropped as
duplicates, and why others are not published.`,
		RunE: func(cmd *cobra.Command, args []string) error { return a.replay(cmd.Context(), f, args) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.lane, "lane", "", "lane (default: the first lane)")
	fl.StringVar(&f.tenant, "tenant", "", "only this tenant's events")
	fl.StringSliceVar(&f.statuses, "status", []string{"dead"}, "states to replay: dead, delivered or both (dead,delivered)")
	fl.StringSliceVar(&f.types, "type", nil, "only these event types (repeat or comma-separate)")
	fl.StringSliceVar(&f.keys, "key", nil, "only these partition keys (repeat or comma-separate)")
	fl.StringVar(&f.since, "since", "", "only events created at or after this: RFC 3339 time, or a duration ago (2h)")
	fl.StringVar(&f.until, "until", "", "only events created before this: RFC 3339 time, or a duration ago (30m)")
	fl.BoolVar(&f.all, "all", false, "replay the whole lane's events of --status when no other filter is given")
	fl.BoolVar(&f.dryRun, "dry-run", false, "count what would be replayed and show a sample, change nothing")
	fl.IntVar(&f.sample, "sample", 10, "events shown by --dry-run")
	fl.BoolVar(&f.asJSON, "json", false, "print the --dry-run report as JSON")
	fl.Float64Var(&f.rate, "rate", 100, "most events replayed per second (0: no limit)")
	fl.IntVar(&f.batch, "batch", admin.DefaultReplayBatch, "most events per transaction")
	fl.StringVar(&f.by, "by", "", "who replays, for the events' history (default: user@host)")
	fl.StringVar(&f.reason, "reason", "", "why, for the events' history")
	fl.BoolVar(&f.yes, "yes", false, "do not ask for confirmation")
	fl.DurationVar(&f.wait, "wait", 30*time.Second, replayWaitUsage)
	return cmd
}

func (a *app) replay(ctx context.Context, f replayFlags, ids []string) error {
	q, err := f.query(ids, time.Now())
	if err != nil {
		return err
	}
	if f.sample < 0 || f.batch <= 0 || f.rate < 0 {
		return usagef("--sample must not be negative, --batch must be positive, --rate must not be negative")
	}
	rt, err := a.load(ctx, openExisting, f.lane)
	if err != nil {
		return err
	}
	defer rt.Close()
	l, err := rt.File.Lane(f.lane)
	if err != nil {
		return err
	}
	q.Scope = store.Scope{Table: l.Table, Tenant: l.Tenant, IncludeTypes: l.IncludeTypes, ExcludeTypes: l.ExcludeTypes}
	if f.tenant != "" {
		q.Tenant = f.tenant
	}
	if !f.dryRun {
		// An older Herald's database lacks the history table.
		if err := rt.Migrate(ctx); err != nil {
			return err
		}
	}
	r := rt.Store.Replays()
	preview, err := admin.PreviewReplay(ctx, r, q, f.sample)
	if err != nil {
		return err
	}
	if f.dryRun {
		return a.printPreview(preview, l.Name, f.asJSON)
	}
	if preview.Count == 0 {
		fmt.Fprintf(a.stdout, "replayed 0 event(s): none of lane %s matches (--status %s)\n", l.Name, strings.Join(f.statuses, ","))
		return nil
	}
	if !f.yes {
		if err := a.confirm(fmt.Sprintf("replay %d event(s) of lane %s?", preview.Count, l.Name)); err != nil {
			return err
		}
	}
	// Ctrl-C stops between batches: what was replayed stays replayed, and is counted.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var rows []int64
	n, err := admin.Replay(ctx, r, q, admin.ReplayOptions{Rate: f.rate, Batch: f.batch, By: f.who(), Reason: f.reason,
		Replayed: func(batch []int64) { rows = append(rows, batch...) }})
	fmt.Fprintf(a.stdout, "replayed %d event(s) of lane %s\n", n, l.Name)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("stopped after %d of %d event(s): %w", n, preview.Count, context.Cause(ctx))
	}
	if err != nil {
		return err
	}
	return a.reportReplay(ctx, r, q.Scope, rows, f.wait)
}

// reportReplay waits up to wait for the relay to publish the rows a replay
// put back to pending and prints what became of them (admin.AwaitReplay):
// `herald replay` and `herald dead replay` report alike.
func (a *app) reportReplay(ctx context.Context, r store.QueryReplayer, scope store.Scope, rows []int64, wait time.Duration) error {
	out, err := admin.AwaitReplay(ctx, r, scope, rows, wait)
	fmt.Fprintln(a.stdout, out)
	return err
}

// replayWaitUsage is the help of --wait, which both replay commands have.
const replayWaitUsage = "how long to wait for the relay to publish the replayed events before reporting what the broker did with them (0: look once)"

// query builds the replay's query from the flags, times relative to now.
func (f replayFlags) query(ids []string, now time.Time) (store.EventQuery, error) {
	q := store.EventQuery{Types: f.types, Keys: f.keys, EventIDs: ids}
	for _, s := range f.statuses {
		st := store.Status(strings.TrimSpace(s))
		if st != store.StatusDead && st != store.StatusDelivered {
			return q, usagef("--status: %q is not dead or delivered (only finished events are replayed)", s)
		}
		q.Statuses = append(q.Statuses, st)
	}
	var err error
	if q.Since, err = parseWhen("--since", f.since, now); err != nil {
		return q, err
	}
	if q.Until, err = parseWhen("--until", f.until, now); err != nil {
		return q, err
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return q, usagef("--since %s is not before --until %s", f.since, f.until)
	}
	filtered := len(f.types)+len(f.keys)+len(ids) > 0 || f.tenant != "" || f.since != "" || f.until != ""
	if filtered == f.all {
		return q, usagef("select events (event ids, --type, --key, --tenant, --since, --until) or pass --all (not both)")
	}
	return q, nil
}

// parseWhen reads an RFC 3339 time, or a duration before now.
func parseWhen(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usagef("%s: %q is neither an RFC 3339 time (2026-01-02T15:04:05Z) nor a positive duration ago (2h)", flag, s)
}

// who is --by, else user@host.
func (f replayFlags) who() string {
	if f.by != "" {
		return f.by
	}
	return whoAmI()
}

// whoAmI names the person running the command: user@host.
func whoAmI() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}

func (a *app) printPreview(p admin.ReplayPreview, lane string, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(a.stdout).Encode(p)
	}
	fmt.Fprintf(a.stdout, "would replay %d event(s) of lane %s", p.Count, lane)
	if len(p.Sample) == 0 {
		fmt.Fprintln(a.stdout)
		return nil
	}
	fmt.Fprintf(a.stdout, "; the first %d:\n", len(p.Sample))
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tEVENT ID\tSTATUS\tTYPE\tKEY\tTENANT\tCREATED (UTC)")
	for _, e := range p.Sample {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.EventID, e.Status, e.Type, e.PartitionKey, e.Tenant,
			e.CreatedAt.Format(time.DateTime))
	}
	return w.Flush()
}
