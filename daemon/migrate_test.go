package daemon

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// Rule: Runtime.Migrate gives each table the indexes of the lanes that
// read it, the union over lanes sharing a table: on MySQL a table of plain
// lanes gets no ordered or tenant index, one read by an ordered lane and a
// tenant lane gets both kinds.
func TestMigrateGivesTablesTheirLanesIndexes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plain, shared := testenv.Name("herald_cfg_plain"), testenv.Name("herald_cfg_shared")
	f, err := parse([]byte(fmt.Sprintf(`store: {driver: mysql, dsn: %q}
brokers:
  b: {type: stdout}
lanes:
  - {name: plain, table: %s, destination: x}
  - {name: shared_plain, table: %s, destination: x}
  - {name: rooms, table: %s, ordering: key, destination: x}
  - {name: acme, table: %s, tenant: acme, destination: x}
`, testenv.MySQLDSN(), plain, shared, shared, shared)), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := OpenStore(ctx, f, true)
	if err != nil {
		testenv.Unreachable(t, "MySQL/MariaDB", err)
	}
	defer rt.Close()
	for _, table := range []string{plain, shared} {
		defer rt.Store.Drop(context.Background(), table) //nolint:errcheck // best effort
	}
	ui, ok := rt.Store.(store.UseIndexer)
	if !ok {
		t.Fatal("the mysql store is not a store.UseIndexer")
	}
	every := store.TableUse{Ordered: true, Tenants: true}
	missing, err := ui.MissingIndexes(ctx, plain, every)
	if err != nil || !slices.Equal(missing, []string{"ordered_claim", "key_order", "tenant_claim"}) {
		t.Errorf("plain lanes' table lacks %v (%v); want every ordered and tenant index missing", missing, err)
	}
	if missing, err := ui.MissingIndexes(ctx, shared, every); err != nil || len(missing) > 0 {
		t.Errorf("ordered and tenant lanes' table lacks %v (%v)", missing, err)
	}
}
