package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/daemon"
	"github.com/heraldhq/herald/lane"
	"github.com/heraldhq/herald/store"
)

// adoptOptions are herald adopt's flags.
type adoptOptions struct {
	table, lane string
	asJSON      bool
}

func (a *app) adoptCommand() *cobra.Command {
	var o adoptOptions
	cmd := &cobra.Command{
		Use:   "adopt --table TABLE | --lane NAME",
		Short: "Propose a lane mapping for an existing outbox table, or check a lane's mapping against its table",
		Long: "With --table, inspect the table and print the lane mapping (columns, statuses, time_unit) it suggests, as YAML to paste " +
			"under lanes:. With --lane, check that lane's mapping against its table: exit 2 naming the key path of each mismatch. " +
			"Both print the indexes the lane's claims need that the table lacks, as CREATE INDEX statements (docs/adopt.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.adopt(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.table, "table", "", "the table to inspect (default with --lane: the lane's)")
	cmd.Flags().StringVar(&o.lane, "lane", "", "a lane with a columns mapping, to check against its table")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	return cmd
}

// adoptReport is what herald adopt found, printed as YAML comments or JSON.
type adoptReport struct {
	// ordered: the checked lane keeps per-key order, which needs indexes
	// of its own (store.OrderIndexer).
	ordered bool
	Store   string       `json:"store"`
	Table   string       `json:"table"`
	Lane    string       `json:"lane,omitempty"`
	Columns []columnJSON `json:"columns"`
	// Statuses are the status column's values and their rows.
	Statuses []valueJSON `json:"statuses,omitempty"`
	// Mapping is the proposed (--table) or checked (--lane) mapping.
	Mapping store.Mapping `json:"-"`
	// Problems name a key path each: a mismatch (--lane) or a key no
	// column was found for (--table).
	Problems []string `json:"problems"`
	// Notes are what to look at in a proposal (status values not placed,
	// states whose value was not seen).
	Notes []string `json:"notes,omitempty"`
	// CreateIndexes are the statements of the indexes the table lacks.
	CreateIndexes []string `json:"create_indexes"`
}

type columnJSON struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

type valueJSON struct {
	Value string `json:"value"`
	Rows  int64  `json:"rows"`
}

func (a *app) adopt(ctx context.Context, o adoptOptions) error {
	all, err := a.loadConfig()
	if err != nil {
		return err
	}
	laneKey, l, err := adoptLane(all, o)
	if err != nil {
		return err
	}
	if o.table == "" {
		o.table = l.Table
	}
	ins, storeName, closeStore, err := a.openInspector(ctx, all, o.lane)
	if err != nil {
		return err
	}
	defer closeStore()
	r := &adoptReport{Store: storeName, Table: o.table, Lane: o.lane, Problems: []string{}, CreateIndexes: []string{}}
	info, err := ins.InspectTable(ctx, o.table)
	if err != nil {
		return err
	}
	if len(info.Columns) == 0 {
		key := "--table"
		if laneKey != "" {
			key = laneKey + ".table"
		}
		return usagef("%s: table %s does not exist in store %s", key, o.table, storeName)
	}
	for _, c := range info.Columns {
		r.Columns = append(r.Columns, columnJSON{c.Name, c.Type})
	}
	if l == nil {
		err = r.propose(ctx, ins, info)
	} else {
		r.Mapping, r.ordered = l.Mapping(), l.Ordering == lane.OrderingKey
		err = r.check(ctx, ins, laneKey)
	}
	if err != nil {
		return err
	}
	r.Notes = append(r.Notes, widthNotes(info, r.Mapping.Columns)...)
	if err := a.printAdopt(r, o.asJSON); err != nil {
		return err
	}
	return r.verdict(laneKey)
}

// adoptLane returns the lane --lane names (nil without one) and its key
// path in the config file.
func adoptLane(all *config.File, o adoptOptions) (string, *config.Lane, error) {
	if o.lane == "" {
		if o.table == "" {
			return "", nil, usagef("name the table to inspect (--table) or a mapped lane to check (--lane)")
		}
		return "", nil, nil
	}
	for i := range all.Lanes {
		l := &all.Lanes[i]
		if l.Name != o.lane {
			continue
		}
		key := fmt.Sprintf("lanes[%d] (%s)", i, l.Name)
		switch {
		case l.Mapping().IsZero():
			return "", nil, usagef("--lane %s: %s has no columns mapping: its table is Herald's own (herald migrate makes it)", o.lane, key)
		case o.table != "" && o.table != l.Table:
			return "", nil, usagef("--table %s: lane %s reads table %s", o.table, o.lane, l.Table)
		}
		return key, l, nil
	}
	_, err := all.Lane(o.lane)
	return "", nil, usageError{fmt.Errorf("--lane: %w", err)}
}

// openInspector opens the store of lane (or --store, or the default one)
// without creating or changing anything.
func (a *app) openInspector(ctx context.Context, all *config.File, lane string) (store.Inspector, string, func(), error) {
	f, err := a.storeFile(all, lane)
	if err != nil {
		return nil, "", nil, err
	}
	if err := daemon.CheckDatabaseExists(f.Store); err != nil {
		return nil, "", nil, err
	}
	rt, err := daemon.OpenStore(ctx, f, false)
	if err != nil {
		return nil, "", nil, err
	}
	ins, ok := rt.Store.(store.Inspecting)
	if !ok {
		rt.Close()
		return nil, "", nil, fmt.Errorf("store %s (%s) cannot inspect tables", f.StoreName(), f.Store.Driver)
	}
	return ins.Inspect(), f.StoreName(), func() { rt.Close() }, nil
}

// check checks the lane's mapping against the table: mapped columns that
// are missing or misfit, status values no state covers, missing indexes.
func (r *adoptReport) check(ctx context.Context, ins store.Inspector, laneKey string) error {
	create, err := ins.CheckMapping(ctx, r.Table, r.Mapping)
	var me *store.MappingError
	switch {
	case errors.As(err, &me):
		r.Problems = append(r.Problems, mismatches(laneKey, r.Mapping, me)...)
	case err != nil:
		return err
	}
	r.CreateIndexes = append(r.CreateIndexes, create...)
	if oi, ok := ins.(store.OrderIndexer); ok && r.ordered && me == nil {
		more, err := oi.OrderIndexes(ctx, r.Table, r.Mapping)
		if err != nil {
			return err
		}
		r.CreateIndexes = append(r.CreateIndexes, more...)
	}
	if me != nil && slices.Contains(me.Missing, r.Mapping.Columns.Status) {
		return nil // no status column to read values from
	}
	values, err := ins.StatusValues(ctx, r.Table, r.Mapping.Columns.Status)
	if err != nil {
		return err
	}
	r.setStatuses(values)
	for _, v := range values {
		if stateOf(r.Mapping.Statuses, v.Value) == "" {
			r.Problems = append(r.Problems, fmt.Sprintf("%s.statuses: value %q (%d rows) is in no state: those rows are never relayed",
				laneKey, v.Value, v.Rows))
		}
	}
	return nil
}

// mismatches names the key path of each column me reports, under
// laneKey (none for a proposal).
func mismatches(laneKey string, m store.Mapping, me *store.MappingError) []string {
	if laneKey != "" {
		laneKey += "."
	}
	var out []string
	for _, col := range me.Missing {
		for _, key := range m.KeysOf(col) {
			out = append(out, fmt.Sprintf("%s%s: column %s is not in table %s", laneKey, key, col, me.Table))
		}
	}
	for _, mf := range me.Misfits {
		for _, key := range m.KeysOf(mf.Column) {
			out = append(out, fmt.Sprintf("%s%s: column %s %s", laneKey, key, mf.Column, mf.Why))
		}
	}
	return out
}

func (r *adoptReport) setStatuses(values []store.ValueCount) {
	for _, v := range values {
		r.Statuses = append(r.Statuses, valueJSON{v.Value, v.Rows})
	}
}

// verdict is the command's error: a configuration error (exit 2) when the
// check found a problem; nil otherwise. Missing indexes alone are no
// error: the lane works without them, slowly.
func (r *adoptReport) verdict(laneKey string) error {
	if len(r.Problems) == 0 {
		return nil
	}
	what := "the proposed mapping is incomplete"
	if laneKey != "" {
		what = laneKey + ": the mapping does not match table " + r.Table
	}
	return usagef("%s (%d problem(s) listed above)", what, len(r.Problems))
}

func (a *app) printAdopt(r *adoptReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			*adoptReport
			Mapping any `json:"mapping"`
		}{r, mappingJSON(r.Mapping)})
	}
	return r.writeText(a.stdout)
}
