package mapsql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// InspectTable returns table's columns and indexes (store.Inspector).
func (ts *Tables) InspectTable(ctx context.Context, table string) (store.TableInfo, error) {
	var info store.TableInfo
	if err := herald.ValidateIdentifier(table); err != nil {
		return info, fmt.Errorf("%s: table: %w", ts.d.Name, err)
	}
	cols, err := ts.d.Columns(ctx, ts.db, table)
	if err != nil {
		return info, fmt.Errorf("%s: inspect %s: %w", ts.d.Name, table, err)
	}
	for name, typ := range cols {
		info.Columns = append(info.Columns, store.ColumnInfo{Name: name, Type: typ,
			Integer: ts.d.IsInteger(typ), Datetime: ts.d.IsDatetime(typ)})
	}
	slices.SortFunc(info.Columns, func(a, b store.ColumnInfo) int { return strings.Compare(a.Name, b.Name) })
	if len(cols) == 0 {
		return info, nil
	}
	if info.Indexes, err = ts.readIndexes(ctx, table); err != nil {
		return info, fmt.Errorf("%s: indexes of %s: %w", ts.d.Name, table, err)
	}
	return info, nil
}

// readIndexes runs the dialect's index query, whose rows are (index name,
// unique, column) in index and column order.
func (ts *Tables) readIndexes(ctx context.Context, table string) ([]store.IndexInfo, error) {
	q, args := ts.d.Indexes(table)
	rows, err := ts.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.IndexInfo
	for rows.Next() {
		var name, col string
		var unique bool
		if err := rows.Scan(&name, &unique, &col); err != nil {
			return nil, err
		}
		if n := len(out); n == 0 || out[n-1].Name != name {
			out = append(out, store.IndexInfo{Name: name, Unique: unique})
		}
		last := &out[len(out)-1]
		last.Columns = append(last.Columns, strings.ToLower(col))
	}
	return out, rows.Err()
}

// StatusValues counts table's rows by the values of column, the most held
// first, at most 100 values (store.Inspector).
func (ts *Tables) StatusValues(ctx context.Context, table, column string) ([]store.ValueCount, error) {
	for _, name := range []string{table, column} {
		if err := herald.ValidateIdentifier(name); err != nil {
			return nil, fmt.Errorf("%s: %w", ts.d.Name, err)
		}
	}
	col := ts.d.Quote(column)
	rows, err := ts.db.QueryContext(ctx, "SELECT "+col+", COUNT(*) FROM "+ts.d.Quote(table)+" GROUP BY "+col+
		" ORDER BY COUNT(*) DESC LIMIT 100")
	if err != nil {
		return nil, fmt.Errorf("%s: values of %s.%s: %w", ts.d.Name, table, column, err)
	}
	defer rows.Close()
	var out []store.ValueCount
	for rows.Next() {
		var v any
		var n int64
		if err := rows.Scan(&v, &n); err != nil {
			return nil, err
		}
		out = append(out, store.ValueCount{Value: text(v), Rows: n})
	}
	return out, rows.Err()
}

// CheckMapping checks m against table as Check does for a mapped table,
// and returns the CREATE INDEX statements of the indexes m needs that the
// table lacks (store.Inspector).
func (ts *Tables) CheckMapping(ctx context.Context, table string, m store.Mapping) ([]string, error) {
	if err := herald.ValidateIdentifier(table); err != nil {
		return nil, fmt.Errorf("%s: table: %w", ts.d.Name, err)
	}
	m = m.WithDefaults()
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: table %s: %w", ts.d.Name, table, err)
	}
	checkErr := newTable(ts, table, m).Check(ctx)
	var me *store.MappingError
	if checkErr != nil && (!errors.As(checkErr, &me) || me.NoTable) {
		return nil, checkErr // no table to index, or no answer
	}
	info, err := ts.InspectTable(ctx, table)
	if err != nil {
		return nil, err
	}
	var create []string
	for _, need := range NeededIndexes(m) {
		if hasColumns(info, need.Columns) && !hasIndex(info.Indexes, need, strings.ToLower(m.Columns.Tenant)) {
			create = append(create, ts.createIndex(table, need))
		}
	}
	return create, checkErr
}

// NeededIndexes are the indexes m's claims and marks read (docs/adopt.md):
// (status, next_attempt) for due pending rows, and a unique index on the
// id, by which every mark finds its row. The look for leases that ran out
// reads the in-flight value's range of the first (a batch or two of rows
// per worker). No (status, lease_until): its entries move at every claim
// and mark (status leads it, and the claim sets lease_until): on MariaDB
// a quarter of the server CPU per event a mapped drain cost beyond
// Herald's own table (docs/adopt.md, How fast); retention's deletes of
// delivered and dead rows read it where a table has one (retention on a
// mapped table).
func NeededIndexes(m store.Mapping) []store.IndexInfo {
	c := m.Columns
	low := strings.ToLower
	return []store.IndexInfo{
		{Name: "due", Columns: []string{low(c.Status), low(c.NextAttempt)}},
		{Name: "id", Unique: true, Columns: []string{low(c.ID)}},
	}
}

// hasIndex says whether one of have serves need: a unique need by a unique
// index of exactly its columns, another by any index that starts with its
// columns, or with the tenant column (when mapped) before them, as a
// tenant-filtered lane's would.
func hasIndex(have []store.IndexInfo, need store.IndexInfo, tenant string) bool {
	for _, ix := range have {
		switch {
		case need.Unique:
			if ix.Unique && slices.Equal(ix.Columns, need.Columns) {
				return true
			}
		case hasPrefix(ix.Columns, need.Columns),
			tenant != "" && len(ix.Columns) > 1 && ix.Columns[0] == tenant && hasPrefix(ix.Columns[1:], need.Columns):
			return true
		}
	}
	return false
}

// hasColumns says whether info has every column of cols: an index on a
// column the table lacks is no use to propose (the check names the column).
func hasColumns(info store.TableInfo, cols []string) bool {
	for _, c := range cols {
		if _, ok := info.Column(c); !ok {
			return false
		}
	}
	return true
}

func hasPrefix(cols, prefix []string) bool {
	return len(cols) >= len(prefix) && slices.Equal(cols[:len(prefix)], prefix)
}

// createIndex is the statement that makes need on table, named after the
// table and what the index is for.
func (ts *Tables) createIndex(table string, need store.IndexInfo) string {
	q := ts.d.Quote
	cols := make([]string, len(need.Columns))
	for i, c := range need.Columns {
		cols[i] = q(c)
	}
	kind := "INDEX"
	if need.Unique {
		kind = "UNIQUE INDEX"
	}
	return "CREATE " + kind + " " + q(table+"_herald_"+need.Name) + " ON " + q(table) + " (" + strings.Join(cols, ", ") + ")"
}

// OrderIndexes returns the CREATE INDEX statements of the indexes an
// ordered lane's claims on table need beyond NeededIndexes that it lacks
// (store.OrderIndexer): (key, created_at), through which a claim looks
// for an earlier row of each candidate's key, and (status, created_at),
// which reads the due rows in the keys' order (ordered.go).
func (ts *Tables) OrderIndexes(ctx context.Context, table string, m store.Mapping) ([]string, error) {
	c := m.Columns
	if c.Key == "" || c.CreatedAt == "" {
		return nil, nil
	}
	info, err := ts.InspectTable(ctx, table)
	if err != nil {
		return nil, err
	}
	low := strings.ToLower
	var create []string
	for _, need := range []store.IndexInfo{
		{Name: "key_order", Columns: []string{low(c.Key), low(c.CreatedAt)}},
		{Name: "due_order", Columns: []string{low(c.Status), low(c.CreatedAt)}},
	} {
		if hasColumns(info, need.Columns) && !hasIndex(info.Indexes, need, low(c.Tenant)) {
			create = append(create, ts.createIndex(table, need))
		}
	}
	return create, nil
}
