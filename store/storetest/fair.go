package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

var fairTests = []test{
	{"ClaimableTenants", testClaimableTenants},
	{"ManyTenants", testManyTenants},
}

// testClaimableTenants: a store lists tenants for fair lanes
// (store.TenantLister): it names, in order, the named tenants with a claimable
// row (pending and due, or in flight past its lease) among the scope's
// types; not the default tenant, nor tenants whose rows are delayed, under
// a live lease, delivered or dead.
func testClaimableTenants(t *testing.T, h *harness) {
	const rule = "ClaimableTenants names the tenants with claimable rows"
	tl := h.s
	of := func(tenant, typ string, delay time.Duration) {
		ev := event(typ)
		ev.Tenant = tenant
		if delay > 0 {
			ev.AvailableAt = time.Now().Add(delay)
		}
		h.enqueue(ev)
	}
	of("a", "A", 0)
	of("b", "A", time.Hour) // delayed
	of("c", "A", 0)         // delivered below
	of("d", "A", 0)         // in flight under a live lease
	of("e", "A", 0)         // in flight, lease runs out
	of("f", "B", 0)
	of("", "A", 0) // the default tenant
	w := newClaimer("w")
	tenant := func(name string) store.Scope { return store.Scope{Tenant: name} }
	h.complete(w, h.claimWith(w, store.ClaimParams{Scope: tenant("c")})...)
	h.claimWith(w, store.ClaimParams{Scope: tenant("d"), Lease: time.Hour})
	const eLease = time.Second
	h.claimWith(w, store.ClaimParams{Scope: tenant("e"), Lease: eLease})
	claimedE := time.Now()

	list := func(sc store.Scope, limit int) []string {
		sc.Table = h.table
		got, err := tl.ClaimableTenants(h.ctx, sc, limit)
		if err != nil {
			t.Fatalf("[%s] ClaimableTenants(%+v, %d): %v", rule, sc, limit, err)
		}
		return got
	}
	// On a machine too busy to list within e's lease, e is rightly there.
	if got := list(store.Scope{}, 10); !slices.Equal(got, []string{"a", "f"}) && time.Since(claimedE) < eLease {
		errorf(t, rule, "before e's lease ran out: %q, want [a f]", got)
	}
	eventually(t, 5*time.Second, rule+" (an expired lease counts)", func() bool {
		return slices.Equal(list(store.Scope{}, 10), []string{"a", "e", "f"})
	})
	if got := list(store.Scope{}, 1); !slices.Equal(got, []string{"a"}) {
		errorf(t, rule, "limit 1: %q, want [a]", got)
	}
	if got := list(store.Scope{IncludeTypes: []string{"B"}}, 10); !slices.Equal(got, []string{"f"}) {
		errorf(t, rule, "include B: %q, want [f]", got)
	}
	if got := list(store.Scope{ExcludeTypes: []string{"B"}}, 10); !slices.Equal(got, []string{"a", "e"}) {
		errorf(t, rule, "exclude B: %q, want [a e]", got)
	}
	if _, err := tl.ClaimableTenants(h.ctx, store.Scope{Table: h.table, Tenant: "a"}, 10); err == nil {
		errorf(t, rule, "a scope with a tenant was accepted")
	}
}

// testManyTenants: the list is the same for a lane with more tenants than
// a store visits one by one (MySQL walks 64, then groups the rest): of 100
// tenants, the 50 with a pending row, in name order, cut at the limit.
func testManyTenants(t *testing.T, h *harness) {
	const rule = "ClaimableTenants names every tenant with claimable rows, however many"
	tl := h.s
	w := newClaimer("w")
	var want []string
	for i := range 100 {
		ev := event("A")
		ev.Tenant = fmt.Sprintf("t%03d", i)
		h.enqueue(ev)
		if i%2 == 0 {
			want = append(want, ev.Tenant)
			continue
		}
		h.complete(w, h.claimWith(w, store.ClaimParams{Scope: store.Scope{Tenant: ev.Tenant}})...)
	}
	for _, limit := range []int{200, 40} {
		got, err := tl.ClaimableTenants(h.ctx, store.Scope{Table: h.table}, limit)
		if err != nil {
			t.Fatalf("[%s] limit %d: %v", rule, limit, err)
		}
		if w := want[:min(limit, len(want))]; !slices.Equal(got, w) {
			errorf(t, rule, "limit %d: %q, want %q", limit, got, w)
		}
	}
}

// testClaimableTenantsExcept: a store that lists tenants while stepping
// over some (store.TenantSkipLister) names the same tenants as
// ClaimableTenants, in the same order, less the skipped ones, whatever the
// skip list's order, duplicates or names without rows; names whose byte
// order and the database's collation may differ included.
func testClaimableTenantsExcept(t *testing.T, h *harness, sl store.TenantSkipLister) {
	const rule = "ClaimableTenantsExcept names the claimable tenants less the skipped ones"
	for _, tenant := range []string{"a", "B", "c", "d", "é", "e", "Z"} {
		ev := event("A")
		ev.Tenant = tenant
		h.enqueue(ev)
	}
	sc := store.Scope{Table: h.table}
	all, err := h.s.ClaimableTenants(h.ctx, sc, 100)
	if err != nil || len(all) != 7 {
		t.Fatalf("[%s] ClaimableTenants: %q, %v", rule, all, err)
	}
	for _, tc := range []struct {
		skip  []string
		limit int
	}{
		{nil, 100}, {[]string{"c"}, 100}, {[]string{"d", "a"}, 100}, {[]string{"zz", "c", "c"}, 100},
		{[]string{"é", "B"}, 100}, {[]string{"Z", "e"}, 100}, {[]string{""}, 100}, {slices.Clone(all), 100},
		{[]string{"a"}, 2}, {[]string{all[0], all[len(all)-1]}, 3},
	} {
		want := slices.DeleteFunc(slices.Clone(all), func(s string) bool { return slices.Contains(tc.skip, s) })
		want = want[:min(tc.limit, len(want))]
		got, err := sl.ClaimableTenantsExcept(h.ctx, sc, tc.limit, tc.skip)
		if err != nil {
			t.Fatalf("[%s] skip %q: %v", rule, tc.skip, err)
		}
		if !slices.Equal(got, want) {
			errorf(t, rule, "skip %q, limit %d: %q, want %q (all: %q)", tc.skip, tc.limit, got, want, all)
		}
	}
}
