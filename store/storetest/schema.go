package storetest

import (
	"testing"
)

var schemaTests = []test{
	{"SchemaVersionBeforeAndAfterMigrate", testSchemaVersion},
}

// A table that was never migrated reports version 0; once migrated, the
// latest version. Commands that only read or write rows rely on this to
// refuse a database nobody migrated.
func testSchemaVersion(t *testing.T, h *harness) {
	fresh := randomName("herald_t")
	cur, latest, err := h.s.SchemaVersion(h.ctx, fresh)
	if err != nil || cur != 0 || latest < 1 {
		t.Fatalf("[schema: a table never migrated is version 0] got %d of %d, %v", cur, latest, err)
	}
	cur, latest, err = h.s.SchemaVersion(h.ctx, h.table)
	if err != nil || cur != latest {
		t.Fatalf("[schema: a migrated table is at the latest version] got %d of %d, %v", cur, latest, err)
	}
}
