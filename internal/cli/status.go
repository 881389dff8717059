package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/admin"
	"github.com/heraldhq/herald/store"
)

func (a *app) statusCommand() *cobra.Command {
	var asJSON bool
	var tenant string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each lane's backlog: pending, retrying, in flight, delivered, dead",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lanes, err := a.status(cmd, tenant)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(map[string][]admin.LaneStatus{"lanes": lanes})
			}
			return a.printStatus(lanes)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&tenant, "tenant", "", "count only this tenant's events")
	return cmd
}

func (a *app) status(cmd *cobra.Command, tenant string) ([]admin.LaneStatus, error) {
	ctx := cmd.Context()
	rt, err := a.load(ctx, false)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	out := make([]admin.LaneStatus, 0, len(rt.File.Lanes))
	for _, l := range rt.File.Lanes {
		scope := store.Scope{Table: l.Table, Tenant: l.Tenant, IncludeTypes: l.IncludeTypes, ExcludeTypes: l.ExcludeTypes}
		if tenant != "" {
			scope.Tenant = tenant
		}
		st, err := rt.Store.Stats(ctx, scope)
		if err != nil {
			return nil, fmt.Errorf("lane %s: %w", l.Name, err)
		}
		out = append(out, admin.NewLaneStatus(l.Name, l.Table, st))
	}
	if err := admin.AddLaneStates(ctx, rt.Store, out); err != nil {
		fmt.Fprintf(a.stderr, "herald: lane state (pauses, brokers) unknown: %v\n", err)
	}
	return out, nil
}

func (a *app) printStatus(lanes []admin.LaneStatus) error {
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "LANE\tTABLE\tPENDING\tRETRYING\tIN FLIGHT\tDELIVERED\tDEAD\tOLDEST PENDING\tSTATE\t")
	for _, l := range lanes {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.1fs\t%s\t\n", l.Name, l.Table, l.Pending, l.Retrying,
			l.InFlight, l.Delivered, l.Dead, l.OldestPendingAgeSeconds, l.StateText())
	}
	return w.Flush()
}
