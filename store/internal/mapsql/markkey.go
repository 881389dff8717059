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
// in. MySQL/MariaDB force the primary key with PrimaryHint instead, where
// the event id is the whole key: left alone, their optimizer may walk the
// status range of such an index when few rows are in flight, locking and
// reading entries other claims changed.

// learnIDKey learns how the marks reach their rows by event id: whether
// the id is the table's whole primary key (primaryHint), and the status
// expression they compare (markStatus).
func (t *Table) learnIDKey(ctx context.Context) error {
	if err := t.learnIDPrimary(ctx); err != nil {
		return err
	}
	return t.learnMarkStatus(ctx)
}

// learnIDPrimary records whether the event id column is the whole primary
// key, where the dialect can tell (for its PrimaryHint and its cursors).
func (t *Table) learnIDPrimary(ctx context.Context) error {
	d := t.ts.d
	if d.PrimaryKey == nil {
		return nil
	}
	pk, err := d.PrimaryKey(ctx, t.ts.db, t.name)
	if err != nil {
		return fmt.Errorf("%s: check table %s: primary key: %w", d.Name, t.name, err)
	}
	t.idPrimary.Store(len(pk) == 1 && strings.EqualFold(pk[0], t.m.Columns.ID))
	return nil
}

// learnMarkStatus records Dialect.Unindexed's form of the status column
// where a unique index holds the event id column alone.
func (t *Table) learnMarkStatus(ctx context.Context) error {
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
