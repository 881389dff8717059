package claimrule

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

func TestKeepOrdered(t *testing.T) {
	cands := []Candidate{
		{ID: 5, Tenant: "a", Key: "k"}, // after the outside blocker 3 of (a, k)
		{ID: 2, Tenant: "a", Key: "k"}, // before it
		{ID: 7, Tenant: "b", Key: "k"}, // same key, other tenant: not blocked
		{ID: 9, Key: ""},               // no key: never blocked
		{ID: 4, Tenant: "a", Key: "j"}, // after the outside blocker 1 of (a, j)
	}
	blockers := map[string]int64{OrderKey("a", "k"): 3, OrderKey("a", "j"): 1}
	got := KeepOrdered(cands, blockers)
	if want := []int64{2, 7, 9}; !slices.Equal(got, want) {
		t.Errorf("KeepOrdered = %v, want %v", got, want)
	}
	keys, maxID := Keys(cands)
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"j", "k"}) || maxID != 9 {
		t.Errorf("Keys = %v, %d", keys, maxID)
	}
}

func TestMissing(t *testing.T) {
	if got := Missing([]int64{1, 2, 3}, []int64{3, 1}); !slices.Equal(got, []int64{2}) {
		t.Errorf("Missing = %v", got)
	}
	if got := Missing([]int64{1}, []int64{1}); got != nil {
		t.Errorf("Missing = %v, want nil", got)
	}
}

func TestCheckClaim(t *testing.T) {
	bad := errors.New("bad claim")
	for _, p := range []store.ClaimParams{{Limit: 0, Lease: time.Second}, {Limit: 1, Lease: 0}} {
		if err := CheckClaim(p, bad); !errors.Is(err, bad) {
			t.Errorf("CheckClaim(%+v) = %v, want %v", p, err, bad)
		}
	}
	if err := CheckClaim(store.ClaimParams{Limit: 1, Lease: time.Second}, bad); err != nil {
		t.Errorf("CheckClaim of good parameters: %v", err)
	}
}
