package mapsql

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// Check returns nil when the table has every mapped column, each of a
// type that fits its use; a *store.MappingError saying what does not
// otherwise; any other error when the database did not answer.
func (t *Table) Check(ctx context.Context) error {
	cols, err := t.ts.d.Columns(ctx, t.ts.db, t.name)
	if err != nil {
		return fmt.Errorf("%s: check table %s: %w", t.ts.d.Name, t.name, err)
	}
	if len(cols) == 0 {
		return &store.MappingError{Table: t.name, NoTable: true}
	}
	e := &store.MappingError{Table: t.name}
	for _, name := range slices.Concat(t.m.Columns.Names(), t.m.BodyColumns(), t.m.HeaderColumnNames()) {
		if _, ok := cols[strings.ToLower(name)]; !ok {
			e.Missing = append(e.Missing, name)
		}
	}
	fits, unit := t.ts.d.IsInteger, "epoch_ms"
	if t.m.TimeUnit == store.TimeDatetime {
		fits, unit = t.ts.d.IsDatetime, "datetime"
	}
	for _, name := range t.m.Columns.TimeColumns() {
		if typ, ok := cols[strings.ToLower(name)]; ok && !fits(typ) {
			e.Misfits = append(e.Misfits, store.Misfit{Column: name, Why: fmt.Sprintf("is %s, which time_unit %s does not fit", typ, unit)})
		}
	}
	for _, name := range []string{t.m.Columns.Fence, t.m.Columns.Attempts} {
		if typ, ok := cols[strings.ToLower(name)]; ok && name != "" && !t.ts.d.IsInteger(typ) {
			e.Misfits = append(e.Misfits, store.Misfit{Column: name, Why: fmt.Sprintf("is %s, not an integer", typ)})
		}
	}
	if len(e.Missing) == 0 && len(e.Misfits) == 0 {
		return t.learn(ctx)
	}
	slices.Sort(e.Missing)
	e.Missing = slices.Compact(e.Missing)
	return e
}

// Ready says whether s has a pending row that is due (store.Peeker),
// without locks: one read per pending value, each a range of the
// (status, next_attempt) index, as a claim reads them. In-flight rows
// whose lease ran out are left to the claims every poll_interval, as on
// Herald's own tables: an OR of the two ranges is no index range, and a
// peek runs every few milliseconds while the lane is active.
func (t *Table) Ready(ctx context.Context, s store.Scope) (bool, error) {
	scope, scopeArgs := sqlbuild.ScopeWhereColumns(s, t.c.Tenant, t.c.Type)
	for _, status := range t.m.Statuses.Pending {
		q := "SELECT 1 FROM " + t.quoted + " WHERE " + t.c.Status + " = ? AND " + t.c.NextAttempt + " <= " + t.now() +
			scope + " LIMIT 1"
		found, err := t.any(ctx, q, append([]any{status}, scopeArgs...))
		if err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// any says whether q reads a row.
func (t *Table) any(ctx context.Context, q string, args []any) (bool, error) {
	rows, err := t.ts.db.QueryContext(ctx, t.rebind(q), args...)
	if err != nil {
		return false, fmt.Errorf("%s: peek %s: %w", t.ts.d.Name, t.name, err)
	}
	defer rows.Close()
	found := rows.Next()
	return found, rows.Err()
}

// Stats counts s's rows by state. Rows in the retry status (when it is not
// the first pending one) count as retrying; values no state maps are not
// counted.
func (t *Table) Stats(ctx context.Context, s store.Scope) (store.LaneStats, error) {
	var st store.LaneStats
	scope, args := sqlbuild.ScopeWhereColumns(s, t.c.Tenant, t.c.Type)
	pending, pargs := t.statusIn(t.m.Statuses.Pending)
	q := "SELECT " + t.c.Status + ", COUNT(*), MAX(CASE WHEN " + pending + " AND " + t.c.NextAttempt + " <= " + t.now() +
		" THEN " + t.ts.d.NowMs + " - " + t.millis(t.c.NextAttempt) + " END) FROM " + t.quoted + " WHERE 1 = 1" + scope +
		" GROUP BY " + t.c.Status
	rows, err := t.ts.db.QueryContext(ctx, t.rebind(q), append(pargs, args...)...)
	if err != nil {
		return st, fmt.Errorf("%s: stats %s: %w", t.ts.d.Name, t.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var status any
		var n int64
		var lagMs *int64
		if err := rows.Scan(&status, &n, &lagMs); err != nil {
			return st, err
		}
		if lagMs != nil {
			st.OldestPendingAge = max(st.OldestPendingAge, time.Duration(*lagMs)*time.Millisecond)
		}
		t.count(&st, text(status), n)
	}
	return st, rows.Err()
}

func (t *Table) count(st *store.LaneStats, status string, n int64) {
	ss := t.m.Statuses
	switch {
	case status == ss.InFlight:
		st.InFlight += n
	case status == ss.Delivered:
		st.Delivered += n
	case status == ss.Dead:
		st.Dead += n
	case status == ss.Retry && status != ss.Pending[0]:
		st.Retrying += n
	case slices.Contains(ss.Pending, status):
		st.Pending += n
	}
}

// ReadColumns runs q, which reads a table's column names and types given
// the table's name, into a map (a Dialect's Columns).
func ReadColumns(ctx context.Context, db Runner, q, table string) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, q, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, err
		}
		cols[strings.ToLower(name)] = strings.ToLower(typ)
	}
	return cols, rows.Err()
}

// ReadStrings runs q with table as its argument and returns the first
// column of its rows.
func ReadStrings(ctx context.Context, db Runner, q, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, q, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ReadWidths runs q with table as its argument and returns its rows of
// (name, width) by lower-case name.
func ReadWidths(ctx context.Context, db Runner, q, table string) (map[string]int, error) {
	rows, err := db.QueryContext(ctx, q, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var name string
		var width int
		if err := rows.Scan(&name, &width); err != nil {
			return nil, err
		}
		out[strings.ToLower(name)] = width
	}
	return out, rows.Err()
}

// Unselected counts the rows of within that are pending or in flight and
// that none of lanes selects (store.Store.Unselected).
func (t *Table) Unselected(ctx context.Context, within store.Scope, lanes []store.Scope) (int64, error) {
	cond, args, err := sqlbuild.UnselectedWhereColumns(within, lanes, t.c.Tenant, t.c.Type)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", t.ts.d.Name, err)
	}
	active, aargs := t.statusIn(append(slices.Clone(t.m.Statuses.Pending), t.m.Statuses.InFlight))
	var n int64
	err = t.ts.db.QueryRowContext(ctx, t.rebind("SELECT COUNT(*) FROM "+t.quoted+" WHERE "+active+cond),
		append(aargs, args...)...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("%s: unselected rows of %s: %w", t.ts.d.Name, t.name, err)
	}
	return n, nil
}
