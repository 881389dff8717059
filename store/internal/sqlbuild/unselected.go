package sqlbuild

import (
	"fmt"

	"github.com/heraldhq/herald/store"
)

// UnselectedWhere returns " AND …" conditions with ? placeholders that keep
// the rows of within (its tenant and type filters) that none of lanes
// selects, and their arguments: one "AND NOT (…)" per lane scope, so a lane
// without filters, which selects every row, leaves none. It refuses a lane
// scope on another table than within's, naming it. Column names are
// unqualified unless alias is set.
func UnselectedWhere(within store.Scope, lanes []store.Scope, alias string) (string, []any, error) {
	col := func(name string) string {
		if alias == "" {
			return name
		}
		return alias + "." + name
	}
	return UnselectedWhereColumns(within, lanes, col("tenant"), col("event_type"))
}

// UnselectedWhereColumns is UnselectedWhere on the given tenant and event
// type columns: a mapped table's own (package mapsql).
func UnselectedWhereColumns(within store.Scope, lanes []store.Scope, tenant, eventType string) (string, []any, error) {
	where, args := ScopeWhereColumns(within, tenant, eventType)
	for _, l := range lanes {
		if l.Table != within.Table {
			return "", nil, fmt.Errorf("unselected rows of %s: a lane scope is on table %q", within.Table, l.Table)
		}
		cond, largs := ScopeWhereColumns(l, tenant, eventType)
		where += " AND NOT (1 = 1" + cond + ")"
		args = append(args, largs...)
	}
	return where, args, nil
}
