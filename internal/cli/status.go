package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/admin"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/daemon"
)

func (a *app) statusCommand() *cobra.Command {
	var asJSON bool
	var tenant string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each lane's backlog (pending, retrying, in flight, delivered, dead) and rows no lane selects",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			report, unread, err := a.status(cmd, tenant)
			if err != nil {
				return err
			}
			// Every store that answered is shown, and the lanes of one that
			// did not are marked; then the command fails naming it.
			if asJSON {
				err = json.NewEncoder(a.stdout).Encode(report)
			} else if err = a.printStatus(report.Lanes); err == nil {
				err = errors.Join(a.printUnselected(report.Unselected), a.printProjections(report.Projections))
			}
			return errors.Join(err, unread)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&tenant, "tenant", "", "count only this tenant's events")
	return cmd
}

// status reads the lanes of every store (or of --store's) in config order
// of the stores: the default store first. A store that cannot be read
// (unreachable, not migrated) does not hide the others: its lanes are in
// the report marked with why (admin.Unreadable), and unread names it.
func (a *app) status(cmd *cobra.Command, tenant string) (report admin.StatusReport, unread, err error) {
	f, err := a.loadConfig()
	if err != nil {
		return admin.StatusReport{}, nil, err
	}
	files, err := a.storeFiles(f)
	if err != nil {
		return admin.StatusReport{}, nil, err
	}
	report = admin.StatusReport{Lanes: []admin.LaneStatus{}, Unselected: []admin.TableUnselected{}}
	var failed []error
	for _, sf := range files {
		part, err := a.storeStatus(cmd.Context(), sf, tenant)
		if err != nil {
			failed = append(failed, storeError(sf, len(files) > 1, err))
			part = admin.Unreadable(admin.StoreLanes{Name: sf.StoreName(), Lanes: sf.Lanes, Projections: daemon.ProjectionRefs(sf)}, err)
		}
		report.Add(part)
	}
	return report, errors.Join(failed...), nil
}

// storeError names the store of err when the command works on several.
func storeError(f *config.File, several bool, err error) error {
	if !several {
		return err
	}
	return fmt.Errorf("store %s: %w", f.StoreName(), err)
}

// storeStatus reads the lanes of one store's part of the config.
func (a *app) storeStatus(ctx context.Context, f *config.File, tenant string) (admin.StatusReport, error) {
	if len(f.Lanes) == 0 && len(f.Projections) == 0 {
		return admin.StatusReport{}, nil
	}
	rt, err := openFile(ctx, f, openExisting)
	if err != nil {
		return admin.StatusReport{}, err
	}
	defer rt.Close()
	part, stateErr, err := admin.StoreStatus(ctx, admin.StoreLanes{Name: f.StoreName(), Store: rt.Store, Lanes: f.Lanes,
		Projections: daemon.ProjectionRefs(f)}, tenant)
	if stateErr != nil {
		a.say("lane state (pauses, brokers) of store %s unknown: %v", f.StoreName(), stateErr)
	}
	return part, err
}

func (a *app) printStatus(lanes []admin.LaneStatus) error {
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "LANE\tSTORE\tTABLE\tPENDING\tRETRYING\tIN FLIGHT\tDELIVERED\tDEAD\tOLDEST PENDING\tSTATE\t")
	for _, l := range lanes {
		if l.StoreError != "" { // counts unknown
			fmt.Fprintf(w, "%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t%s\t\n", l.Name, l.Store, l.Table, l.StateText())
			continue
		}
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

// printProjections lists the configured projections below the lanes:
// their ledger rows by state and, for outbox sources, how far behind they
// are ("-" for broker sources, whose backlog only the broker knows).
func (a *app) printProjections(ps []admin.ProjectionStatus) error {
	if len(ps) == 0 {
		return nil
	}
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "\nPROJECTION\tSTORE\tPROCESSING\tFAILED\tDONE\tDEAD\tBEHIND\tLAG\t")
	for _, p := range ps {
		if p.StoreError != "" {
			fmt.Fprintf(w, "%s\t%s\t-\t-\t-\t-\t-\t-\t%s\n", p.Name, p.Store, p.StoreError)
			continue
		}
		behind, lag := "-", "-"
		if p.Behind >= 0 {
			behind, lag = strconv.FormatInt(p.Behind, 10), fmt.Sprintf("%.1fs", p.LagSeconds)
			if p.Behind >= admin.ProjectionBehindCap {
				behind = ">=" + behind
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t\n", p.Name, p.Store, p.Processing, p.Failed, p.Done, p.Dead, behind, lag)
	}
	return w.Flush()
}
