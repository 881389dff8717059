package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/lane"
)

// checkMappedTables checks each mapped lane's table against its mapping
// as `herald adopt --lane` does (the check `herald run` makes at start,
// and the status values in the rows), opening the lanes' stores without
// creating or changing anything. Each problem is printed on stderr under
// its key path; any problem is a configuration error (exit 2). Missing
// indexes are printed as comments and are no error.
func (a *app) checkMappedTables(ctx context.Context, f *config.File) error {
	var problems []string
	for i, l := range f.Lanes {
		if l.Mapping().IsZero() {
			continue
		}
		key := fmt.Sprintf("lanes[%d] (%s)", i, l.Name)
		found, err := a.checkMappedLane(ctx, f, key, l)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		problems = append(problems, found...)
	}
	for _, p := range problems {
		fmt.Fprintln(a.stderr, p)
	}
	if len(problems) > 0 {
		return usagef("%d mapped table problem(s) listed above", len(problems))
	}
	return nil
}

// checkMappedLane returns the problems of one mapped lane's table, and
// prints the indexes its claims need that it lacks.
func (a *app) checkMappedLane(ctx context.Context, f *config.File, key string, l config.Lane) ([]string, error) {
	ins, storeName, closeStore, err := a.openInspector(ctx, f, l.Name)
	if err != nil {
		return nil, err
	}
	defer closeStore()
	info, err := ins.InspectTable(ctx, l.Table)
	if err != nil {
		return nil, err
	}
	if len(info.Columns) == 0 {
		return []string{fmt.Sprintf("%s.table: table %s does not exist in store %s", key, l.Table, storeName)}, nil
	}
	r := &adoptReport{Table: l.Table, Mapping: l.Mapping(), ordered: l.Ordering == lane.OrderingKey}
	if err := r.check(ctx, ins, key); err != nil {
		return nil, err
	}
	for _, c := range r.CreateIndexes {
		fmt.Fprintf(a.stdout, "# %s: table %s lacks an index its claims need: %s\n", key, l.Table, strings.TrimSuffix(c, ";")+";")
	}
	return r.Problems, nil
}
