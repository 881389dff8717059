package mysql

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/store"
)

// TestFairTenantsPlan checks that each state's tenant list reads only the
// tenant_claim index ("Using index"), never the rows. It is not a loose
// index scan (one dive per tenant) since schema version 2 keys tenant_claim
// on virtual columns: MariaDB does no loose scan of such an index, so the
// list reads the named tenants' index entries (see fair.go).
func TestFairTenantsPlan(t *testing.T) {
	s, table := planTable(t, "herald_fairplan")
	for _, status := range []store.Status{store.StatusPending, store.StatusInFlight} {
		q, args := claimableTenantsQuery("`"+table+"`", status, store.Scope{Table: table}, 100)
		if key, extra := explain(t, s.DB(), q, args); key != "tenant_claim" || !strings.Contains(extra, "Using index") {
			t.Errorf("tenants with %s rows: key %q, Extra %q, want tenant_claim read alone (Using index)", status, key, extra)
		}
	}
}
