package mapsql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// Search by query on a mapped table (store.QueryReplayer's reads): the
// query's fields on the mapped columns, rows in event id order (the table
// has no row id), numbered by refs.

// where returns the " AND …" conditions that select q's rows, with ?
// placeholders, and their arguments; an error names a field the table
// has no column for.
func (t *Table) where(q store.EventQuery) (string, []any, error) {
	if err := q.Validate(); err != nil {
		return "", nil, err
	}
	c := t.c
	switch {
	case q.Tenant != "" && c.Tenant == "":
		return "", nil, errors.New("query: tenant: the mapped table has no columns.tenant")
	case len(q.Keys) > 0 && c.Key == "":
		return "", nil, errors.New("query: keys: the mapped table has no columns.key")
	case (!q.Since.IsZero() || !q.Until.IsZero()) && c.CreatedAt == "":
		return "", nil, errors.New("query: since/until: the mapped table has no columns.created_at")
	}
	where, args := sqlbuild.ScopeWhereColumns(q.Scope, c.Tenant, c.Type)
	var b strings.Builder
	b.WriteString(where)
	in := func(col string, vals []string) {
		b.WriteString(" AND " + col + " IN (" + sqlbuild.Marks(len(vals)) + ")")
		args = append(args, sqlbuild.StringArgs(vals)...)
	}
	if len(q.Statuses) > 0 {
		var values []string
		for _, s := range q.Statuses {
			values = append(values, t.values(s)...)
		}
		in(c.Status, values)
	}
	for _, f := range []struct {
		col  string
		vals []string
	}{{c.Type, q.Types}, {c.Key, q.Keys}, {c.ID, q.EventIDs}} {
		if len(f.vals) > 0 {
			in(f.col, f.vals)
		}
	}
	if len(q.RowIDs) > 0 {
		if ids := t.refs.eventIDs(q.RowIDs); len(ids) > 0 {
			in(c.ID, ids)
		} else {
			b.WriteString(" AND 1 = 0") // rows of another process: none of them here
		}
	}
	for _, bound := range []struct {
		at time.Time
		op string
	}{{q.Since, " >= ?"}, {q.Until, " < ?"}} {
		if !bound.at.IsZero() {
			b.WriteString(" AND " + c.CreatedAt + bound.op)
			args = append(args, t.timeArg(bound.at))
		}
	}
	return b.String(), args, nil
}

// timeArg is at as the table's time columns hold it.
func (t *Table) timeArg(at time.Time) any {
	if t.m.TimeUnit == store.TimeDatetime {
		return at.UTC()
	}
	return at.UnixMilli()
}

// CountEvents counts the rows q selects (a plain read).
func (t *Table) CountEvents(ctx context.Context, q store.EventQuery) (int64, error) {
	where, args, err := t.where(q)
	if err != nil {
		return 0, err
	}
	var n int64
	err = t.ts.db.QueryRowContext(ctx, t.rebind("SELECT COUNT(*) FROM "+t.quoted+" WHERE 1 = 1"+where), args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("%s: count events %s: %w", t.ts.d.Name, t.name, err)
	}
	return n, nil
}

// FindEvents returns up to limit rows q selects after the row numbered
// afterID (0: from the first), in event id order; with q.NewestFirst in
// descending event id order, before it.
func (t *Table) FindEvents(ctx context.Context, q store.EventQuery, afterID int64, limit int) ([]store.Record, error) {
	where, args, err := t.where(q)
	if err != nil {
		return nil, err
	}
	where, args, err = t.after(where, args, afterID, q.NewestFirst)
	if err != nil {
		return nil, err
	}
	order := t.c.ID
	if q.NewestFirst {
		order += " DESC"
	}
	rows, err := t.ts.db.QueryContext(ctx, t.rebind("SELECT "+t.readColumns()+" FROM "+t.quoted+" WHERE 1 = 1"+where+
		" ORDER BY "+order+" LIMIT ?"), append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("%s: find events %s: %w", t.ts.d.Name, t.name, err)
	}
	recs, err := t.scanRead(rows)
	if err != nil {
		return nil, fmt.Errorf("%s: find events %s: %w", t.ts.d.Name, t.name, err)
	}
	t.refs.number(recs)
	return recs, nil
}

// after adds to where the bound of a page that starts after the row
// numbered afterID (before it, descending); 0 adds nothing.
func (t *Table) after(where string, args []any, afterID int64, descending bool) (string, []any, error) {
	if afterID <= 0 {
		return where, args, nil
	}
	id, err := t.refs.eventID(afterID)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %s: %w", t.ts.d.Name, t.name, err)
	}
	op := " > ?"
	if descending {
		op = " < ?"
	}
	return where + " AND " + t.c.ID + op, append(args, id), nil
}
