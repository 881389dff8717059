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
		Short: "Show each lane's backlog (pending, retrying, in flight, delivered, dead) and rows no lane selects",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			report, err := a.status(cmd, tenant)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(report)
			}
			if err := a.printStatus(report.Lanes); err != nil {
				return err
			}
			return a.printUnselected(report.Unselected)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&tenant, "tenant", "", "count only this tenant's events")
	return cmd
}

func (a *app) status(cmd *cobra.Command, tenant string) (admin.StatusReport, error) {
	ctx := cmd.Context()
	rt, err := a.load(ctx, openExisting)
	if err != nil {
		return admin.StatusReport{}, err
	}
	defer rt.Close()
	out := make([]admin.LaneStatus, 0, len(rt.File.Lanes))
	scopes := make([]store.Scope, 0, len(rt.File.Lanes))
	for _, l := range rt.File.Lanes {
		scope := store.Scope{Table: l.Table, Tenant: l.Tenant, IncludeTypes: l.IncludeTypes, ExcludeTypes: l.ExcludeTypes}
		scopes = append(scopes, scope)
		if tenant != "" {
			scope.Tenant = tenant
		}
		st, err := rt.Store.Stats(ctx, scope)
		if err != nil {
			return admin.StatusReport{}, fmt.Errorf("lane %s: %w", l.Name, err)
		}
		out = append(out, admin.NewLaneStatus(l.Name, l.Table, st))
	}
	if err := admin.AddLaneStates(ctx, rt.Store, out); err != nil {
		a.say("lane state (pauses, brokers) unknown: %v", err)
	}
	unselected, err := admin.Unselected(ctx, rt.Store, scopes, tenant)
	if err != nil {
		return admin.StatusReport{}, err
	}
	return admin.StatusReport{Lanes: out, Unselected: unselected}, nil
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

// printUnselected lists each table's rows that no lane selects, below the
// lanes: a lane's counts cannot show them.
func (a *app) printUnselected(tables []admin.TableUnselected) error {
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "\nTABLE\tUNSELECTED\t")
	some := false
	for _, u := range tables {
		fmt.Fprintf(w, "%s\t%d\t\n", u.Table, u.Rows)
		some = some || u.Rows > 0
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if some {
		fmt.Fprintln(a.stdout, "unselected: pending rows outside every lane's tenant, include_types and exclude_types;"+
			" they wait until a lane takes them")
	}
	return nil
}
