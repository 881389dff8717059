package mapsql

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/heraldhq/herald/store"
)

// A mark finds its rows by event id and checks that each is still in
// flight under its claim. On a table whose statistics predate its backlog
// (a queue's usual state: analyzed while its rows were new), PostgreSQL
// takes "status = in flight" for a handful of rows and reads the whole
// in-flight range of the service's (status, …) index, entries of earlier
// claims' rows included, for every mark, instead of probing the event id's
// key once per row (TestAdoptMappedMarkPlan). Where the event id has a
// unique index of its own, the marks compare the status through
// Dialect.Unindexed, which no index can serve, so the key is the only way
// in. MySQL/MariaDB force the key with PrimaryHint instead.

// learnIDKey works out the status expression the marks compare
// (markStatus): Dialect.Unindexed's where a unique index holds the event
// id column alone, else the column.
func (t *Table) learnIDKey(ctx context.Context) error {
	d := t.ts.d
	if d.Unindexed == nil {
		return nil
	}
	ixs, err := t.ts.readIndexes(ctx, t.name)
	if err != nil {
		return fmt.Errorf("%s: check table %s: indexes: %w", d.Name, t.name, err)
	}
	id := []string{strings.ToLower(t.m.Columns.ID)}
	if !slices.ContainsFunc(ixs, func(ix store.IndexInfo) bool { return ix.Unique && slices.Equal(ix.Columns, id) }) {
		t.markStatusExpr.Store(t.c.Status)
		return nil
	}
	cols, err := d.Columns(ctx, t.ts.db, t.name)
	if err != nil {
		return fmt.Errorf("%s: check table %s: columns: %w", d.Name, t.name, err)
	}
	t.markStatusExpr.Store(d.Unindexed(t.c.Status, d.IsInteger(cols[strings.ToLower(t.m.Columns.Status)])))
	return nil
}

// markStatus is the status column as a mark's fence compares it.
func (t *Table) markStatus() string {
	if expr, ok := t.markStatusExpr.Load().(string); ok {
		return expr
	}
	return t.c.Status
}
