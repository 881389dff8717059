package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/admin"
	"github.com/heraldhq/herald/config"
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

// status reads the lanes of every store (or of --store's) in config order
// of the stores: the default store first.
func (a *app) status(cmd *cobra.Command, tenant string) (admin.StatusReport, error) {
	f, err := a.loadConfig()
	if err != nil {
		return admin.StatusReport{}, err
	}
	files, err := a.storeFiles(f)
	if err != nil {
		return admin.StatusReport{}, err
	}
	report := admin.StatusReport{Lanes: []admin.LaneStatus{}, Unselected: []admin.TableUnselected{}}
	for _, sf := range files {
		part, err := a.storeStatus(cmd.Context(), sf, tenant)
		if err != nil {
			return admin.StatusReport{}, err
		}
		report.Add(part)
	}
	return report, nil
}

// storeStatus reads the lanes of one store's part of the config.
func (a *app) storeStatus(ctx context.Context, f *config.File, tenant string) (admin.StatusReport, error) {
	if len(f.Lanes) == 0 {
		return admin.StatusReport{}, nil // a store only projections use
	}
	rt, err := openFile(ctx, f, openExisting)
	if err != nil {
		return admin.StatusReport{}, err
	}
	defer rt.Close()
	part, stateErr, err := admin.StoreStatus(ctx, admin.StoreLanes{Name: f.StoreName(), Store: rt.Store, Lanes: f.Lanes}, tenant)
	if stateErr != nil {
		a.say("lane state (pauses, brokers) of store %s unknown: %v", f.StoreName(), stateErr)
	}
	return part, err
}

func (a *app) printStatus(lanes []admin.LaneStatus) error {
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "LANE\tSTORE\tTABLE\tPENDING\tRETRYING\tIN FLIGHT\tDELIVERED\tDEAD\tOLDEST PENDING\tSTATE\t")
	for _, l := range lanes {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.1fs\t%s\t\n", l.Name, l.Store, l.Table, l.Pending, l.Retrying,
			l.InFlight, l.Delivered, l.Dead, l.OldestPendingAgeSeconds, l.StateText())
	}
	return w.Flush()
}

// printUnselected lists each table's rows that no lane selects, below the
// lanes: a lane's counts cannot show them.
func (a *app) printUnselected(tables []admin.TableUnselected) error {
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "\nSTORE\tTABLE\tUNSELECTED\t")
	some := false
	for _, u := range tables {
		fmt.Fprintf(w, "%s\t%s\t%d\t\n", u.Store, u.Table, u.Rows)
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
