package admin

import (
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// Rule: selects applies a lane's tenant, include and exclude filters to a
// row as the stores' claim does: all must let the row through.
func TestSelectsAppliesEveryFilter(t *testing.T) {
	row := store.Record{Event: herald.Event{Type: "Paid", Tenant: "acme"}}
	for _, c := range []struct {
		scope store.Scope
		want  bool
	}{
		{store.Scope{}, true},
		{store.Scope{Tenant: "acme"}, true},
		{store.Scope{Tenant: "zeta"}, false},
		{store.Scope{IncludeTypes: []string{"Paid"}}, true},
		{store.Scope{IncludeTypes: []string{"Refunded"}}, false},
		{store.Scope{ExcludeTypes: []string{"Paid"}}, false},
		{store.Scope{Tenant: "acme", IncludeTypes: []string{"Paid"}, ExcludeTypes: []string{"Refunded"}}, true},
	} {
		if got := selects(c.scope, row); got != c.want {
			t.Errorf("scope %+v selects a Paid event of acme: %v; want %v", c.scope, got, c.want)
		}
	}
}
