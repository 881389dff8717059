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

// TestFairTenantsPlan checks that each state's tenant list is a loose
// index scan of tenant_claim ("Using index for group-by": one dive per
// tenant), not a read of every claimable row.
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
		if key, extra := explain(t, s.DB(), q, args); key != "tenant_claim" || !strings.Contains(extra, "Using index for group-by") {
			t.Errorf("tenants with %s rows: key %q, Extra %q, want a loose index scan of tenant_claim (Using index for group-by)", status, key, extra)
		}
	}
}
