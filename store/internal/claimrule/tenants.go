package claimrule

import (
	"fmt"
	"slices"

	"github.com/heraldhq/herald/store"
)

// SortedUnique sorts vs, drops repeats and keeps at most limit of them.
func SortedUnique(vs []string, limit int) []string {
	slices.Sort(vs)
	vs = slices.Compact(vs)
	return vs[:min(len(vs), limit)]
}

// CheckTenantList checks the arguments of a ClaimableTenants call: a scope
// without a tenant (fair lanes share between tenants) and a positive limit.
func CheckTenantList(sc store.Scope, limit int, bad error) error {
	if sc.Tenant != "" || limit <= 0 {
		return fmt.Errorf("%w: claimable tenants of %s need a scope without a tenant and a positive limit (got %q, %d)",
			bad, sc.Table, sc.Tenant, limit)
	}
	return nil
}
