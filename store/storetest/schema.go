package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/heraldhq/herald/store"
)

var schemaTests = []test{
	{"SchemaVersionBeforeAndAfterMigrate", testSchemaVersion},
	{"CheckTableNamesWhatIsMissing", testCheckTable},
	{"MigrateMakesADroppedTableAgain", testMigrateDropped},
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

// CheckTable passes a migrated table and names, with store.ErrSchema, a
// table that does not exist, a column it lacks and a version behind the
// latest: what a relay reports as "run herald migrate" instead of waiting
// for a database that is not down.
func testCheckTable(t *testing.T, h *harness) {
	tc := h.s
	if err := tc.CheckTable(h.ctx, h.table); err != nil {
		t.Fatalf("[check: a migrated table passes] %v", err)
	}
	wantSchemaError(t, "a table never made", tc.CheckTable(h.ctx, randomName("herald_t")), "does not exist")
	h.exec("ALTER TABLE " + h.table + " DROP COLUMN last_error")
	wantSchemaError(t, "a table without last_error", tc.CheckTable(h.ctx, h.table), "last_error")

	other := randomName("herald_t")
	if err := h.s.Migrate(h.ctx, other); err != nil {
		t.Fatal(err)
	}
	_, latest, err := h.s.SchemaVersion(h.ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	h.exec(fmt.Sprintf("DELETE FROM herald_migrations WHERE table_name = '%s' AND version = %d", other, latest))
	wantSchemaError(t, "a table behind the latest version", tc.CheckTable(h.ctx, other),
		fmt.Sprintf("version %d of %d", latest-1, latest))
}

// A table dropped by hand keeps its migration records; migrating it again
// must make it again, not find it up to date: that is what the relay's
// "run herald migrate" for a dropped table promises.
func testMigrateDropped(t *testing.T, h *harness) {
	h.exec("DROP TABLE " + h.table)
	if err := store.MigrateFor(h.ctx, h.s, h.table, store.TableUse{Ordered: true, Tenants: true}); err != nil {
		t.Fatalf("[migrate: a dropped table] %v", err)
	}
	if err := h.s.CheckTable(h.ctx, h.table); err != nil {
		t.Fatalf("[migrate: a dropped table is made again] %v", err)
	}
	h.enqueue(event("Again"))
	if st := h.stats(); st.Pending != 1 {
		t.Errorf("[migrate: a dropped table made again takes events] pending %d, want 1", st.Pending)
	}
}

func wantSchemaError(t *testing.T, what string, err error, names string) {
	t.Helper()
	if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), names) {
		t.Errorf("[check: %s is store.ErrSchema naming %q] got %v", what, names, err)
	}
}

// exec runs one statement on the store's pool, failing the test on error.
func (h *harness) exec(stmt string) {
	h.t.Helper()
	if _, err := h.s.DB().ExecContext(h.ctx, stmt); err != nil {
		h.t.Fatalf("[setup] %s: %v", stmt, err)
	}
}

// Columns checks that want, a store's list of the outbox columns its
// TableChecker requires, is exactly the columns of a table migrated to
// the latest version: a migration that adds a column must add it there.
func Columns(t *testing.T, s store.Store, want []string) {
	t.Helper()
	ctx := t.Context()
	table := randomName("herald_t")
	if err := s.Migrate(ctx, table); err != nil {
		t.Fatal(err)
	}
	rows, err := s.DB().QueryContext(ctx, "SELECT * FROM "+table+" WHERE 1 = 0")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	have, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	have, want = slices.Clone(have), slices.Clone(want)
	sort.Strings(have)
	sort.Strings(want)
	if !slices.Equal(have, want) {
		t.Errorf("[columns: the checked list is the migrated table's]\nmigrated: %v\nlisted:   %v", have, want)
	}
}
