package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/admin"
	"github.com/heraldhq/herald/daemon"
	"github.com/heraldhq/herald/store"
)

// deadFlags are the flags every dead subcommand shares.
type deadFlags struct {
	lane, tenant string
	all, asJSON  bool
	yes, dryRun  bool
	limit        int
	// after pages list: a row id, or on a mapped table an event id.
	after string
	// wait bounds how long `dead replay` waits to report what the relay
	// did with the replayed events (as `herald replay --wait`).
	wait time.Duration
}

func (a *app) deadCommand() *cobra.Command {
	var f deadFlags
	cmd := &cobra.Command{
		Use:   "dead",
		Short: "Inspect, replay and purge dead events",
	}
	cmd.PersistentFlags().StringVar(&f.lane, "lane", "", "lane (default: the first lane)")
	cmd.PersistentFlags().StringVar(&f.tenant, "tenant", "", "only this tenant's events")
	list := &cobra.Command{Use: "list", Short: "List dead events, oldest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.deadList(cmd.Context(), f) }}
	list.Flags().IntVar(&f.limit, "limit", 50, "how many to list")
	list.Flags().StringVar(&f.after, "after", "", "list rows after this one (paging): its row id, or its event id on a mapped table")
	list.Flags().BoolVar(&f.asJSON, "json", false, "print JSON lines")
	show := &cobra.Command{Use: "show EVENT_ID", Short: "Show one dead event, payload included", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.deadShow(cmd.Context(), f, args[0]) }}
	replay := &cobra.Command{Use: "replay [EVENT_ID...] | --all", Short: "Put dead events back to pending with their attempts reset",
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.deadChange(cmd.Context(), f, args, replayChange)
		}}
	replay.Flags().BoolVar(&f.all, "all", false, "replay every dead event of the lane")
	replay.Flags().BoolVar(&f.dryRun, "dry-run", false, "count what would be replayed, change nothing")
	replay.Flags().DurationVar(&f.wait, "wait", 30*time.Second, replayWaitUsage)
	purge := &cobra.Command{Use: "purge [EVENT_ID...] | --all", Short: "Delete dead events for good (asks first unless --yes)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.deadChange(cmd.Context(), f, args, purgeChange)
		}}
	purge.Flags().BoolVar(&f.all, "all", false, "purge every dead event of the lane")
	purge.Flags().BoolVar(&f.yes, "yes", false, "do not ask for confirmation")
	purge.Flags().BoolVar(&f.dryRun, "dry-run", false, "count what would be purged, change nothing")
	cmd.AddCommand(list, show, replay, purge)
	return cmd
}

// deadScope opens the store and returns the chosen lane's scope, and
// whether the lane reads a mapped table (docs/adopt.md).
func (a *app) deadScope(ctx context.Context, f deadFlags) (*daemon.Runtime, store.Scope, bool, error) {
	rt, err := a.load(ctx, openExisting, f.lane)
	if err != nil {
		return nil, store.Scope{}, false, err
	}
	l, err := rt.File.Lane(f.lane)
	if err != nil {
		rt.Close()
		return nil, store.Scope{}, false, err
	}
	scope := store.Scope{Table: l.Table, Tenant: l.Tenant, IncludeTypes: l.IncludeTypes, ExcludeTypes: l.ExcludeTypes}
	if f.tenant != "" {
		scope.Tenant = f.tenant
	}
	return rt, scope, !l.Mapping().IsZero(), nil
}

// listParams pages a lane's dead rows after --after: a row id, or an event
// id on a mapped table, which has no row ids.
func (f deadFlags) listParams(scope store.Scope, mapped bool) (store.ListParams, error) {
	p := store.ListParams{Scope: scope, Status: store.StatusDead, Limit: f.limit}
	if mapped || f.after == "" {
		p.AfterEventID = f.after
		return p, nil
	}
	id, err := strconv.ParseInt(f.after, 10, 64)
	if err != nil {
		return p, usagef("--after: %q is not a row id (a mapped table pages by event id)", f.after)
	}
	p.AfterID = id
	return p, nil
}

func (a *app) deadList(ctx context.Context, f deadFlags) error {
	if f.limit <= 0 {
		return usagef("--limit must be positive")
	}
	rt, scope, mapped, err := a.deadScope(ctx, f)
	if err != nil {
		return err
	}
	defer rt.Close()
	p, err := f.listParams(scope, mapped)
	if err != nil {
		return err
	}
	recs, err := rt.Store.List(ctx, p)
	if err != nil {
		return err
	}
	if f.asJSON {
		enc := json.NewEncoder(a.stdout)
		for _, r := range recs {
			if err := enc.Encode(admin.NewDeadSummary(r)); err != nil {
				return err
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tEVENT ID\tTYPE\tKEY\tTENANT\tATTEMPTS\tDIED (UTC)\tLAST ERROR")
	for _, r := range recs {
		id := r.ID
		if mapped {
			id = 0 // the store's number for the row lasts only as long as this process
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", id, r.Event.ID, r.Event.Type, r.Event.PartitionKey,
			r.Event.Tenant, r.Attempts, diedAt(r.DiedAt), oneLine(r.LastError, 80))
	}
	return w.Flush()
}

// diedAt is when a row went dead, or "-" where the table does not keep it
// (a mapped table).
func diedAt(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.DateTime)
}

func (a *app) deadShow(ctx context.Context, f deadFlags, id string) error {
	rt, scope, _, err := a.deadScope(ctx, f)
	if err != nil {
		return err
	}
	defer rt.Close()
	r, err := rt.Store.Get(ctx, scope.Table, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("event %s is not in table %s%s", id, scope.Table, a.otherLaneHint(ctx, rt, scope.Table, id))
	}
	if err != nil {
		return fmt.Errorf("event %s: %w", id, err)
	}
	d := admin.NewEventDetail(r, nil)
	out := struct {
		admin.DeadSummary
		Status        store.Status      `json:"status"`
		Headers       map[string]string `json:"headers"`
		HeadersError  string            `json:"headers_error,omitempty"`
		HeadersStored *string           `json:"headers_stored,omitempty"`
		Payload       json.RawMessage   `json:"payload,omitempty"`
		PayloadBase64 []byte            `json:"payload_base64,omitempty"`
		// Errors are the attempts' errors the row keeps, oldest first
		// (empty on a mapped table, which keeps last_error only).
		Errors []store.AttemptError `json:"errors"`
	}{DeadSummary: admin.NewDeadSummary(r), Status: r.Status, Headers: r.Event.Headers,
		HeadersError: d.HeadersError, HeadersStored: d.HeadersStored, Errors: d.Errors}
	if json.Valid(r.Event.Payload) {
		out.Payload = r.Event.Payload
	} else {
		out.PayloadBase64 = r.Event.Payload
	}
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// otherLaneHint looks for the event in the other lanes' tables and names
// the --lane that finds it.
func (a *app) otherLaneHint(ctx context.Context, rt *daemon.Runtime, table, id string) string {
	for _, l := range rt.File.Lanes {
		if l.Table == table {
			continue
		}
		if _, err := rt.Store.Get(ctx, l.Table, id); err == nil {
			return fmt.Sprintf("; it is in %s: add --lane %s", l.Table, l.Name)
		}
	}
	return " (nor in any other lane's table)"
}

// deadChangeKind is replay or purge, with the words to report them.
type deadChangeKind struct{ verb, done string }

var (
	replayChange = deadChangeKind{"replay", "replayed"}
	purgeChange  = deadChangeKind{"purge", "purged"}
)

func (a *app) deadChange(ctx context.Context, f deadFlags, ids []string, kind deadChangeKind) error {
	if f.all == (len(ids) > 0) {
		return usagef("name the event ids to %s, or pass --all (not both)", kind.verb)
	}
	rt, scope, _, err := a.deadScope(ctx, f)
	if err != nil {
		return err
	}
	defer rt.Close()
	if kind == replayChange && !f.dryRun {
		// An older Herald's database lacks the replay history table.
		if err := rt.Migrate(ctx); err != nil {
			return err
		}
	}
	ids, refused := a.deadOnly(ctx, rt, scope.Table, ids)
	n, err := a.countChange(ctx, rt, scope, ids, f.all)
	if err != nil {
		return err
	}
	switch {
	case f.dryRun:
		fmt.Fprintf(a.stdout, "would %s %d dead event(s) of %s\n", kind.verb, n, scope.Table)
	case n == 0:
		fmt.Fprintf(a.stdout, "%s 0 dead event(s)\n", kind.done)
	case kind == purgeChange && !f.yes:
		if err := a.confirm(fmt.Sprintf("purge %d dead event(s) of %s for good?", n, scope.Table)); err != nil {
			return err
		}
		fallthrough
	default:
		var rows []int64
		if n, rows, err = applyChange(ctx, rt.Store, scope, ids, kind); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%s %d dead event(s)\n", kind.done, n)
		if kind == replayChange {
			err = a.reportReplay(ctx, rt.Store.Replays(), scope, rows, f.wait)
		}
	}
	return errors.Join(append(refused, err)...)
}

// deadOnly keeps the ids of dead events of table and returns an error for
// each other id, naming it and why.
func (a *app) deadOnly(ctx context.Context, rt *daemon.Runtime, table string, ids []string) (dead []string, refused []error) {
	for _, id := range ids {
		r, err := rt.Store.Get(ctx, table, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			refused = append(refused, fmt.Errorf("event %s is not in table %s%s", id, table, a.otherLaneHint(ctx, rt, table, id)))
		case err != nil:
			refused = append(refused, fmt.Errorf("event %s: %w", id, err))
		case r.Status != store.StatusDead:
			refused = append(refused, fmt.Errorf("event %s is %s, not dead: left as it is", id, r.Status))
		default:
			dead = append(dead, id)
		}
	}
	return dead, refused
}

// countChange counts the dead events a replay or purge would change.
func (a *app) countChange(ctx context.Context, rt *daemon.Runtime, scope store.Scope, ids []string, all bool) (int64, error) {
	if !all {
		return int64(len(ids)), nil
	}
	st, err := rt.Store.Stats(ctx, scope)
	return st.Dead, err
}

// applyChange replays or purges the dead events of ids (all of scope's
// when ids is empty) and returns how many it changed and, for a replay,
// the rows it put back to pending. A replay goes through replay by query,
// so each event's history records it and each gets a dedupe id of its own
// (on a mapped table, where it has a receipt column: docs/adopt.md).
func applyChange(ctx context.Context, s store.Store, scope store.Scope, ids []string, kind deadChangeKind) (int64, []int64, error) {
	if kind != replayChange {
		n, err := s.Purge(ctx, scope, ids)
		return n, nil, err
	}
	var rows []int64
	q := store.EventQuery{Scope: scope, Statuses: []store.Status{store.StatusDead}, EventIDs: ids}
	n, err := admin.Replay(ctx, s.Replays(), q, admin.ReplayOptions{By: whoAmI(), Reason: "herald dead replay",
		Replayed: func(batch []int64) { rows = append(rows, batch...) }})
	return n, rows, err
}

// confirm asks a yes/no question on stderr and reads the answer from
// standard input; anything but y or yes (or no input at all) declines.
func (a *app) confirm(question string) error {
	fmt.Fprintf(a.stderr, "%s [y/N] ", question)
	line, _ := bufio.NewReader(stdinOr()).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errors.New("not confirmed: nothing changed (pass --yes to skip the question)")
}

func oneLine(s string, max int) string {
	b := []rune(s)
	for i, r := range b {
		if r == '\n' || r == '\r' || r == '\t' {
			b[i] = ' '
		}
	}
	if len(b) > max {
		return string(b[:max-1]) + "…"
	}
	return string(b)
}
