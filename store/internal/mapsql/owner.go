package mapsql

import (
	"context"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/store"
)

// Without a fence column a claim writes its token after the worker id in
// the lease owner column ("node/wallet-01#2kq3x0b7z1mf"), which the
// service's own worker may have sized for its ids alone. A value too long
// for the column fails every claim (MySQL in strict mode, PostgreSQL) or
// is cut (MySQL otherwise), and a cut owner would never match its mark.
// So a claim whose owner does not fit is refused, naming the column and
// the width needed: a table problem, not a database outage.

// learnOwnerWidth reads the lease owner column's width (0: unbounded or
// unknown), where the dialect can tell and no fence column holds the token.
func (t *Table) learnOwnerWidth(ctx context.Context) error {
	d := t.ts.d
	if d.Widths == nil || t.c.Fence != "" {
		return nil
	}
	widths, err := d.Widths(ctx, t.ts.db, t.name)
	if err != nil {
		return fmt.Errorf("%s: check table %s: column widths: %w", d.Name, t.name, err)
	}
	t.ownerWidth.Store(int64(widths[strings.ToLower(t.m.Columns.LeaseOwner)]))
	return nil
}

// ownerFits refuses an owner value longer than the lease owner column.
func (t *Table) ownerFits(owner string) error {
	w := int(t.ownerWidth.Load())
	if w == 0 || len(owner) <= w {
		return nil
	}
	return &store.MappingError{Table: t.name, Misfits: []store.Misfit{{Column: t.m.Columns.LeaseOwner,
		Why: fmt.Sprintf("holds %d characters, and a claim writes %d into it (%q: the worker id, then the claim's "+
			"fencing token, as the table maps no fence column): widen it to at least %d, or map columns.fence",
			w, len(owner), owner, max(len(owner), 64))}}}
}
