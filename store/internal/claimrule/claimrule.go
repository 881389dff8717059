// Package claimrule holds the rules of claims that do not depend on a
// database: the ordered-claim guard over locked candidates, the check of
// claim parameters, the lost ids of a fenced mark, and the tenant list of
// fair lanes.
package claimrule

import (
	"fmt"

	"github.com/heraldhq/herald/store"
)

// Missing returns the ids of want that are not in got, in want's order: the
// rows a fenced update did not change (their lease was lost).
func Missing(want, got []int64) []int64 {
	if len(got) == len(want) {
		return nil
	}
	seen := make(map[int64]bool, len(got))
	for _, id := range got {
		seen[id] = true
	}
	var lost []int64
	for _, id := range want {
		if !seen[id] {
			lost = append(lost, id)
		}
	}
	return lost
}

// Candidate is a row an ordered claim locked. Ordering is per partition
// key within a tenant.
type Candidate struct {
	ID     int64
	Tenant string
	Key    string
}

// OrderKey is the map key of blockers for a tenant's partition key.
func OrderKey(tenant, key string) string { return tenant + "\x00" + key }

// KeepOrdered applies the ordered-claim rule to locked candidates: a row
// with a partition key is kept only if no earlier unfinished row of its key
// lies outside the candidates. blockers maps a key to the smallest id of
// such an outside row (pending, in flight, or dead when parking), by
// OrderKey. Rows
// without a key are always kept. It returns the kept ids.
//
// The blockers come from a plain read, not a SKIP LOCKED one: a row another
// worker has locked (and is claiming right now) still counts, so two workers
// never hold rows of one key out of order.
func KeepOrdered(cands []Candidate, blockers map[string]int64) []int64 {
	kept := make([]int64, 0, len(cands))
	for _, c := range cands {
		if b, ok := blockers[OrderKey(c.Tenant, c.Key)]; c.Key != "" && ok && b < c.ID {
			continue
		}
		kept = append(kept, c.ID)
	}
	return kept
}

// Keys returns the distinct non-empty partition keys of cands (of any
// tenant) and the largest id.
func Keys(cands []Candidate) (keys []string, maxID int64) {
	seen := map[string]bool{}
	for _, c := range cands {
		maxID = max(maxID, c.ID)
		if c.Key != "" && !seen[c.Key] {
			seen[c.Key] = true
			keys = append(keys, c.Key)
		}
	}
	return keys, maxID
}

// CheckClaim refuses claim parameters that cannot work (no rows or no
// lease), wrapping bad (the store's ErrBadClaim).
func CheckClaim(p store.ClaimParams, bad error) error {
	if p.Limit <= 0 {
		return fmt.Errorf("%w: limit %d must be positive", bad, p.Limit)
	}
	if p.Lease <= 0 {
		return fmt.Errorf("%w: lease %v must be positive", bad, p.Lease)
	}
	return nil
}
