package store

import (
	"context"
	"errors"
)

// Previewer is an optional Store ability: the rows of s that the lane's
// next claims would take, read without a lock and changing nothing (no
// status, lease or attempt is written), for `herald lane preview`. Each
// record is as a claim returns it (a mapped table's body built, its header
// columns set, Attempts counting the claim that would take it), in claim
// order: due rows by when they became due, then in-flight rows whose lease
// ran out. Stores without it cannot preview.
type Previewer interface {
	Preview(ctx context.Context, s Scope, limit int) ([]Record, error)
}

// ErrNoPreview is returned for a store that is no Previewer.
var ErrNoPreview = errors.New("this store cannot preview a lane")

// Claimable returns recs, read from a table of Herald's own, as a claim
// would return them: in flight, Attempts counting that claim. It is for
// Previewer implementations.
func Claimable(recs []Record) []Record {
	for i := range recs {
		recs[i].Attempts++
		recs[i].Status = StatusInFlight
	}
	return recs
}
