package sqlite_test

import (
	"testing"

	"github.com/heraldhq/herald/store/sqlite"
	"github.com/heraldhq/herald/store/storetest"
)

// Rule: CheckTable requires exactly the columns of a migrated table.
func TestOutboxColumns(t *testing.T) {
	storetest.Columns(t, opener(t, sqlite.Options{})(t), sqlite.OutboxColumns)
}
