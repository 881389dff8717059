package mysql

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/dbtest"
)

// TestFairTenantsPlan checks that each state's tenant list reads only the
// tenant_claim index ("Using index"), never the rows. It is not a loose
// index scan (one dive per tenant) since schema version 2 keys tenant_claim
// on virtual columns: MariaDB does no loose scan of such an index, so the
// list reads the named tenants' index entries (see fair.go).
func TestFairTenantsPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, testenv.MySQLDSN(), Options{})
	if err != nil {
		testenv.Unreachable(t, "MySQL/MariaDB", err)
	}
	defer s.Close()
	table := testenv.Name("herald_fairplan")
	if err := s.Migrate(ctx, table); err != nil {
		t.Fatal(err)
	}
	defer dbtest.Drop(s, table)
	fillForPlans(t, s.DB(), table)
	for _, status := range []store.Status{store.StatusPending, store.StatusInFlight} {
		q, args := claimableTenantsQuery("`"+table+"`", status, store.Scope{Table: table}, 100)
		if key, extra := explain(t, s.DB(), q, args); key != "tenant_claim" || !strings.Contains(extra, "Using index") {
			t.Errorf("tenants with %s rows: key %q, Extra %q, want tenant_claim read alone (Using index)", status, key, extra)
		}
	}
}
