package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/admin"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/store"
)

// deadFlags are the flags every dead subcommand shares.
type deadFlags struct {
	lane, tenant string
	all, asJSON  bool
	limit        int
	after        int64
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
	list.Flags().Int64Var(&f.after, "after", 0, "list rows with an id above this (paging)")
	list.Flags().BoolVar(&f.asJSON, "json", false, "print JSON lines")
	show := &cobra.Command{Use: "show EVENT_ID", Short: "Show one dead event, payload included", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.deadShow(cmd.Context(), f, args[0]) }}
	replay := &cobra.Command{Use: "replay [EVENT_ID...] | --all", Short: "Put dead events back to pending with their attempts reset",
		RunE: func(cmd *cobra.Command, args []string) error { return a.deadChange(cmd.Context(), f, args, "replayed") }}
	replay.Flags().BoolVar(&f.all, "all", false, "replay every dead event of the lane")
	purge := &cobra.Command{Use: "purge [EVENT_ID...] | --all", Short: "Delete dead events for good",
		RunE: func(cmd *cobra.Command, args []string) error { return a.deadChange(cmd.Context(), f, args, "purged") }}
	purge.Flags().BoolVar(&f.all, "all", false, "purge every dead event of the lane")
	cmd.AddCommand(list, show, replay, purge)
	return cmd
}

// deadScope opens the store and returns the chosen lane's scope.
func (a *app) deadScope(ctx context.Context, f deadFlags) (*config.Runtime, store.Scope, error) {
	rt, err := a.load(ctx, false)
	if err != nil {
		return nil, store.Scope{}, err
	}
	l, err := rt.File.Lane(f.lane)
	if err != nil {
		rt.Close()
		return nil, store.Scope{}, err
	}
	scope := store.Scope{Table: l.Table, Tenant: l.Tenant, IncludeTypes: l.IncludeTypes, ExcludeTypes: l.ExcludeTypes}
	if f.tenant != "" {
		scope.Tenant = f.tenant
	}
	return rt, scope, nil
}

func (a *app) deadList(ctx context.Context, f deadFlags) error {
	if f.limit <= 0 {
		return usagef("--limit must be positive")
	}
	rt, scope, err := a.deadScope(ctx, f)
	if err != nil {
		return err
	}
	defer rt.Close()
	recs, err := rt.Store.List(ctx, store.ListParams{Scope: scope, Status: store.StatusDead, AfterID: f.after, Limit: f.limit})
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
	fmt.Fprintln(w, "ID\tEVENT ID\tTYPE\tKEY\tTENANT\tATTEMPTS\tAGE\tLAST ERROR")
	for _, r := range recs {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, r.Event.ID, r.Event.Type, r.Event.PartitionKey,
			r.Event.Tenant, r.Attempts, r.Age.Round(time.Second), oneLine(r.LastError, 80))
	}
	return w.Flush()
}

func (a *app) deadShow(ctx context.Context, f deadFlags, id string) error {
	rt, scope, err := a.deadScope(ctx, f)
	if err != nil {
		return err
	}
	defer rt.Close()
	r, err := rt.Store.Get(ctx, scope.Table, id)
	if err != nil {
		return fmt.Errorf("event %s: %w", id, err)
	}
	out := struct {
		admin.DeadSummary
		Status        store.Status      `json:"status"`
		Headers       map[string]string `json:"headers"`
		Payload       json.RawMessage   `json:"payload,omitempty"`
		PayloadBase64 []byte            `json:"payload_base64,omitempty"`
	}{DeadSummary: admin.NewDeadSummary(r), Status: r.Status, Headers: r.Event.Headers}
	if json.Valid(r.Event.Payload) {
		out.Payload = r.Event.Payload
	} else {
		out.PayloadBase64 = r.Event.Payload
	}
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func (a *app) deadChange(ctx context.Context, f deadFlags, ids []string, verb string) error {
	if f.all == (len(ids) > 0) {
		return usagef("name the event ids to %s, or pass --all (not both)", verb[:len(verb)-1])
	}
	rt, scope, err := a.deadScope(ctx, f)
	if err != nil {
		return err
	}
	defer rt.Close()
	var n int64
	if verb == "replayed" {
		n, err = rt.Store.Replay(ctx, scope, ids)
	} else {
		n, err = rt.Store.Purge(ctx, scope, ids)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s %d dead event(s)\n", verb, n)
	if len(ids) > 0 && n < int64(len(ids)) {
		return fmt.Errorf("%d of the %d event ids were not dead events of lane table %s", int64(len(ids))-n, len(ids), scope.Table)
	}
	return nil
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
