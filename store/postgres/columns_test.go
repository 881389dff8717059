package postgres_test

import (
	"testing"

	"github.com/heraldhq/herald/store/postgres"
	"github.com/heraldhq/herald/store/storetest"
)

// Rule: CheckTable requires exactly the columns of a migrated table.
func TestOutboxColumns(t *testing.T) { storetest.Columns(t, opener(t), postgres.OutboxColumns) }
