package cli

import (
	"fmt"

	"github.com/heraldhq/herald/store"
)

// widthNotes suggests CHAR for the mapped status and lease owner columns
// where they are VARCHAR on MySQL/MariaDB (information_schema's data_type
// "varchar"; PostgreSQL says "character varying"). Every claim and mark
// changes their values' lengths ('pending' → 'delivering' → 'delivered',
// ” → the worker id), and InnoDB rewrites a record whose size changes
// instead of updating it in place: on MariaDB the wallet table of
// docs/adopt.md drained at about two thirds of Herald's own table's rate
// that way, and within a tenth of it with both columns CHAR and
// (status, next_attempt) its only index beside the primary key.
func widthNotes(info store.TableInfo, c store.Columns) []string {
	var notes []string
	for _, col := range []struct{ key, name string }{{"status", c.Status}, {"lease_owner", c.LeaseOwner}} {
		if ci, ok := info.Column(col.name); ok && col.name != "" && ci.Type == "varchar" {
			notes = append(notes, fmt.Sprintf("columns.%s: column %s is VARCHAR: declared CHAR of the same width, "+
				"claims and marks rewrite rows in place (faster on MySQL/MariaDB; docs/adopt.md, How fast)", col.key, col.name))
		}
	}
	return notes
}
