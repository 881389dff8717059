package mapsql

import (
	"context"
	"fmt"
	"strings"
	"unicode"
)

// MariaDB evaluates every CHECK constraint of a table at every UPDATE of a
// row, whatever columns the UPDATE sets. Its JSON type is a LONGTEXT with
// CHECK (json_valid(col)), so on a table with a JSON payload each claim and
// each mark parsed every claimed row's payload again: twice per event, for
// columns Herald never writes. A check that reads none of the columns
// Herald writes holds after Herald's UPDATE exactly when it held before;
// where every check of the table is such, the lease and the marks run
// without evaluating them (Dialect.Unchecked). A check that reads a
// written column (a status list, say) is evaluated as always.

// learnChecks asks the dialect whether the table's checks may be left out
// of Herald's updates, and how.
func (t *Table) learnChecks(ctx context.Context) error {
	d := t.ts.d
	if d.Unchecked == nil {
		return nil
	}
	prefix, err := d.Unchecked(ctx, t.ts.db, t.name, t.writtenColumns())
	if err != nil {
		return fmt.Errorf("%s: check table %s: check constraints: %w", d.Name, t.name, err)
	}
	t.updatePrefix.Store(prefix)
	return nil
}

// writtenColumns are the mapped columns that claims and marks set.
func (t *Table) writtenColumns() []string {
	c := t.m.Columns
	var out []string
	for _, n := range []string{c.Status, c.Attempts, c.NextAttempt, c.LeaseUntil, c.LeaseOwner, c.Fence,
		c.LastError, c.Receipt, c.DeliveredAt} {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// ReadsAny says whether a check clause may read one of columns: any word
// of it, quoted or not, that names one (case-insensitive). A word in a
// string literal counts too, which only keeps a check that could have
// been left out.
func ReadsAny(clause string, columns []string) bool {
	words := strings.FieldsFunc(clause, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '$')
	})
	for _, w := range words {
		for _, c := range columns {
			if strings.EqualFold(w, c) {
				return true
			}
		}
	}
	return false
}
