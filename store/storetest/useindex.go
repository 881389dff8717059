package storetest

import (
	"errors"
	"testing"

	"github.com/heraldhq/herald/store"
)

var indexByUseTests = []featureTest[store.UseIndexer]{
	{"MigrateForAddsMissingIndexes", testMigrateForAddsIndexes},
}

// testMigrateForAddsIndexes: a table migrated for plain lanes lacks the
// indexes of ordered and tenant claims, and says so (MissingIndexes,
// store.CheckIndexes); MigrateFor adds them, after which nothing is
// missing for any use.
func testMigrateForAddsIndexes(t *testing.T, h *harness, ui store.UseIndexer) {
	table := randomName("herald_t")
	t.Cleanup(func() { _ = h.s.Drop(h.ctx, table) })
	if err := h.s.Migrate(h.ctx, table); err != nil {
		t.Fatalf("[migrate] Migrate(%s): %v", table, err)
	}
	every := store.TableUse{Ordered: true, Tenants: true}
	missing, err := ui.MissingIndexes(h.ctx, table, every)
	if err != nil || len(missing) == 0 {
		errorf(t, "a plain lanes' table lacks the indexes of ordered and tenant claims", "missing %q, %v", missing, err)
	}
	if err := store.CheckIndexes(h.ctx, h.s, table, every, "lane x"); !errors.Is(err, store.ErrMissingIndex) {
		errorf(t, "CheckIndexes refuses a table without the indexes its lanes read", "got %v, want ErrMissingIndex", err)
	}
	if err := store.MigrateFor(h.ctx, h.s, table, every); err != nil {
		t.Fatalf("[migrate] MigrateFor(%s, %s): %v", table, every, err)
	}
	for _, use := range []store.TableUse{{}, {Ordered: true}, {Tenants: true}, every} {
		if missing, err := ui.MissingIndexes(h.ctx, table, use); err != nil || len(missing) > 0 {
			errorf(t, "MigrateFor adds every index its use reads", "for %s missing %q, %v", use, missing, err)
		}
	}
	if err := store.CheckIndexes(h.ctx, h.s, table, every, "lane x"); err != nil {
		errorf(t, "CheckIndexes passes a table with every index", "%v", err)
	}
}
