package storetest

import (
	"testing"

	"github.com/heraldhq/herald/store"
)

var unselectedTests = []test{
	{"CountsRowsNoLaneSelects", testUnselected},
}

// testUnselected: Unselected counts pending and in-flight rows that none of
// the given lane scopes selects (by tenant, include and exclude types),
// within an optional tenant; delivered and dead rows never count.
func testUnselected(t *testing.T, h *harness) {
	const rule = "Unselected counts the unfinished rows no lane selects"
	tenanted := func(typ, tenant string) {
		ev := event(typ)
		ev.Tenant = tenant
		h.enqueue(ev)
	}
	tenanted("A", "t1")
	tenanted("B", "t1") // unselected
	tenanted("C", "t2")
	tenanted("D", "t1") // unselected
	tenanted("Zd", "t1")
	tenanted("Zk", "t1")
	tenanted("Zf", "t1") // unselected, in flight
	c := newClaimer("w")
	recs := h.claimWith(c, store.ClaimParams{Scope: store.Scope{IncludeTypes: []string{"Zd", "Zk", "Zf"}}})
	if len(recs) != 3 {
		t.Fatalf("[%s] claimed %d Z rows, want 3", rule, len(recs))
	}
	for _, r := range recs {
		switch r.Event.Type {
		case "Zd":
			h.complete(c, r)
		case "Zk":
			if _, err := h.s.Kill(h.ctx, c.fence(h), []store.Failure{{ID: r.ID, Error: "x"}}); err != nil {
				t.Fatalf("[%s] Kill: %v", rule, err)
			}
		}
	}
	lanes := []store.Scope{
		{Table: h.table, IncludeTypes: []string{"A"}},
		{Table: h.table, Tenant: "t2", ExcludeTypes: []string{"A"}},
	}
	for _, tc := range []struct {
		name   string
		within store.Scope
		lanes  []store.Scope
		want   int64
	}{
		{"two lanes", h.scope(), lanes, 3},
		{"within tenant t1", store.Scope{Table: h.table, Tenant: "t1"}, lanes, 3},
		{"within tenant t2", store.Scope{Table: h.table, Tenant: "t2"}, lanes, 0},
		{"within types", store.Scope{Table: h.table, IncludeTypes: []string{"B", "C"}}, lanes, 1},
		{"no lanes", h.scope(), nil, 5},
		{"a lane without filters", h.scope(), append(lanes, h.scope()), 0},
	} {
		n, err := h.s.Unselected(h.ctx, tc.within, tc.lanes)
		if err != nil || n != tc.want {
			errorf(t, rule, "%s: Unselected = %d, %v; want %d", tc.name, n, err, tc.want)
		}
	}
	other := []store.Scope{{Table: randomName("herald_other")}}
	if _, err := h.s.Unselected(h.ctx, h.scope(), other); err == nil {
		errorf(t, "Unselected refuses a lane scope on another table", "no error")
	}
}
