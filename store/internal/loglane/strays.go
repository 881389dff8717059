package loglane

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/store"
)

// StrayError is the last_error a stray row gets when it is handed over
// (LogReader.Strays): an operator who finds it knows where it came from.
const StrayError = "stranded: the log lane passed this row without settling it; handed to the lane's polling workers"

// StraySteps are one store's parts of LogReader.Strays.
type StraySteps struct {
	// Reached reports whether the lane's recorded position is at or past
	// end.
	Reached func(ctx context.Context, end uint64) (bool, error)
	// HandOver gives the rows of ids still pending, without an owner and
	// not journaled to the polling workers, and returns their ids.
	HandOver func(ctx context.Context, ids []int64) ([]int64, error)
	// Sample returns up to limit pending rows without an owner, oldest
	// first, and then the log's end.
	Sample func(ctx context.Context, limit int) (store.StrayProbe, error)
}

// Strays is LogReader.Strays over a store's steps: check the probe once the
// position reached its end, then sample anew. Errors start with who (the
// store) and name the lane.
func Strays(ctx context.Context, who, lane string, s StraySteps, probe store.StrayProbe, limit int) (store.StrayProbe, []int64, error) {
	next, handed, err := strays(ctx, s, probe, limit)
	if err != nil {
		return next, handed, fmt.Errorf("%s: looking for stranded rows of lane %s: %w", who, lane, err)
	}
	return next, handed, nil
}

func strays(ctx context.Context, s StraySteps, probe store.StrayProbe, limit int) (store.StrayProbe, []int64, error) {
	var handed []int64
	if len(probe.IDs) > 0 {
		reached, err := s.Reached(ctx, probe.LogEnd)
		if err != nil || !reached {
			return probe, nil, err
		}
		if handed, err = s.HandOver(ctx, probe.IDs); err != nil {
			return probe, nil, err
		}
	}
	next, err := s.Sample(ctx, limit)
	if err != nil {
		return store.StrayProbe{}, handed, err
	}
	return next, handed, nil
}
