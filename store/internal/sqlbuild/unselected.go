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
	where, args := ScopeWhere(within, alias)
	for _, l := range lanes {
		if l.Table != within.Table {
			return "", nil, fmt.Errorf("unselected rows of %s: a lane scope is on table %q", within.Table, l.Table)
		}
		cond, largs := ScopeWhere(l, alias)
		where += " AND NOT (1 = 1" + cond + ")"
		args = append(args, largs...)
	}
	return where, args, nil
}
