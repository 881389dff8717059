package admin

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/store"
)

// TableUnselected is one outbox table's rows that no configured lane
// selects (pending or in flight, outside every lane's tenant and type
// filters): they wait forever and no lane's counts show them. It is the
// "unselected" list of `herald status --json` and GET /api/lanes.
type TableUnselected struct {
	// Store names the table's store (set by StoreStatus).
	Store string `json:"store,omitempty"`
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
}

// StatusReport is `herald status --json` and GET /api/lanes (a contract:
// field names do not change).
type StatusReport struct {
	Lanes      []LaneStatus      `json:"lanes"`
	Unselected []TableUnselected `json:"unselected"`
	// Projections are the configured projections (left out when none).
	Projections []ProjectionStatus `json:"projections,omitempty"`
}

// Unselected counts, for each table of lanes in the order first named,
// the rows that no lane on that table selects; tenant, when set, counts
// only that tenant's rows.
func Unselected(ctx context.Context, st store.Store, lanes []store.Scope, tenant string) ([]TableUnselected, error) {
	var tables []string
	byTable := map[string][]store.Scope{}
	for _, l := range lanes {
		if _, ok := byTable[l.Table]; !ok {
			tables = append(tables, l.Table)
		}
		byTable[l.Table] = append(byTable[l.Table], l)
	}
	out := make([]TableUnselected, 0, len(tables))
	for _, table := range tables {
		n, err := st.Unselected(ctx, store.Scope{Table: table, Tenant: tenant}, byTable[table])
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", table, err)
		}
		out = append(out, TableUnselected{Table: table, Rows: n})
	}
	return out, nil
}
