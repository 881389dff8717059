package store

import (
	"context"
	"fmt"
	"strings"
)

// Inspecting is an optional Store ability, for `herald adopt`: reading the
// shape of a table Herald did not make, so that a mapping can be proposed
// for it or checked against it. All three SQL stores have it; a store
// without it cannot be asked.
type Inspecting interface {
	Inspect() Inspector
}

// Inspector reads tables' shapes (Inspecting).
type Inspector interface {
	// InspectTable returns table's columns and indexes; a TableInfo
	// without columns when the table does not exist.
	InspectTable(ctx context.Context, table string) (TableInfo, error)
	// StatusValues returns the values found in table's column and how
	// many rows hold each, the most held first (at most 100 values).
	StatusValues(ctx context.Context, table, column string) ([]ValueCount, error)
	// CheckMapping checks m (valid) against table as a migration checks a
	// mapped table: nil, or a *MappingError saying what does not match,
	// or another error when the database did not answer. It also returns
	// a CREATE INDEX statement for each index m's claims and marks need
	// that table lacks (docs/adopt.md), in the database's own SQL.
	CheckMapping(ctx context.Context, table string, m Mapping) (createIndexes []string, err error)
}

// TableInfo is a table's shape as its database describes it.
type TableInfo struct {
	// Columns are in name order; none when the table does not exist.
	Columns []ColumnInfo
	Indexes []IndexInfo
}

// Column returns the column named name (any case), and whether there is one.
func (ti TableInfo) Column(name string) (ColumnInfo, bool) {
	for _, c := range ti.Columns {
		if strings.EqualFold(c.Name, name) {
			return c, true
		}
	}
	return ColumnInfo{}, false
}

// ColumnInfo is one column: its name and type as the database names them
// (lower case), and which time_unit its type fits.
type ColumnInfo struct {
	Name, Type string
	// Integer says it holds integers (epoch_ms times, counters);
	// Datetime that it fits time_unit datetime.
	Integer, Datetime bool
}

// IndexInfo is one index (or primary key) of a table.
type IndexInfo struct {
	Name    string
	Unique  bool
	Columns []string // in the index's order, lower case
}

// ValueCount is a value found in a column and how many rows hold it.
type ValueCount struct {
	Value string
	Rows  int64
}

// KeysOf returns the key paths under a lane that name column (any case):
// "columns.lease_until", "body[3].column".
func (m Mapping) KeysOf(column string) []string {
	var out []string
	for _, c := range m.Columns.named() {
		if strings.EqualFold(c.name, column) {
			out = append(out, "columns."+c.key)
		}
	}
	for i, f := range m.Body {
		if f.Column != "" && strings.EqualFold(f.Column, column) {
			out = append(out, fmt.Sprintf("body[%d].column", i))
		}
	}
	return out
}

// OrderIndexer is an optional Inspector ability: the indexes an ordered
// lane (ordering: key) on a mapped table needs beyond CheckMapping's,
// as CREATE INDEX statements of those the table lacks (docs/adopt.md).
type OrderIndexer interface {
	OrderIndexes(ctx context.Context, table string, m Mapping) (createIndexes []string, err error)
}
