package admin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
)

// ReplayOutcome is what became of the rows a replay put back to pending:
// "replayed" alone says nothing about what consumers saw, so a replay
// reports how many the broker took, how many it dropped as duplicates, and
// why the others are not there yet.
type ReplayOutcome struct {
	Replayed int64 `json:"replayed"`
	// Published counts rows delivered again, Duplicates those of them the
	// broker reported it already held (so consumers did not get them again).
	Published  int64 `json:"published"`
	Duplicates int64 `json:"duplicates"`
	// Pending counts rows not published yet (pending or in flight), Dead
	// those that failed for good.
	Pending int64 `json:"pending"`
	Dead    int64 `json:"dead"`
	// Why explains every count that is not a plain publication.
	Why []string `json:"why,omitempty"`
}

// String is the outcome in one line, for a terminal.
func (o ReplayOutcome) String() string {
	s := fmt.Sprintf("published %d, dropped by the broker as duplicates %d, not published yet %d, dead %d",
		o.Published, o.Duplicates, o.Pending, o.Dead)
	if len(o.Why) > 0 {
		s += ": " + strings.Join(o.Why, "; ")
	}
	return s
}

// replayOutcomeChunk bounds the row ids one read of AwaitReplay names.
const replayOutcomeChunk = 500

// replayPoll is how often AwaitReplay looks.
const replayPoll = 200 * time.Millisecond

// AwaitReplay waits up to wait for the relay to publish the rows ids of
// scope that a replay put back to pending, and reports what became of
// them. It returns early once none is pending or in flight; a zero wait
// looks once.
func AwaitReplay(ctx context.Context, r store.QueryReplayer, scope store.Scope, ids []int64, wait time.Duration) (ReplayOutcome, error) {
	deadline := time.Now().Add(wait)
	for {
		o, err := replayOutcome(ctx, r, scope, ids)
		if err != nil || o.Pending == 0 || !time.Now().Before(deadline) {
			o.explain(wait)
			return o, err
		}
		select {
		case <-ctx.Done():
			o.explain(wait)
			return o, context.Cause(ctx)
		case <-time.After(min(replayPoll, time.Until(deadline))):
		}
	}
}

// replayOutcome counts the rows ids by what became of them.
func replayOutcome(ctx context.Context, r store.QueryReplayer, scope store.Scope, ids []int64) (ReplayOutcome, error) {
	o := ReplayOutcome{Replayed: int64(len(ids))}
	for start := 0; start < len(ids); start += replayOutcomeChunk {
		chunk := ids[start:min(start+replayOutcomeChunk, len(ids))]
		recs, err := r.FindEvents(ctx, store.EventQuery{Scope: scope, RowIDs: chunk}, 0, len(chunk))
		if err != nil {
			return o, err
		}
		for _, rec := range recs {
			switch rec.Status {
			case store.StatusDelivered:
				o.Published++
				if rec.Receipt.Duplicate {
					o.Duplicates++
				}
			case store.StatusDead:
				o.Dead++
			default:
				o.Pending++
			}
		}
	}
	return o, nil
}

// explain says why counts are not plain publications.
func (o *ReplayOutcome) explain(wait time.Duration) {
	if o.Duplicates > 0 {
		o.Why = append(o.Why, fmt.Sprintf("%d were dropped as duplicates: the broker already held a message with "+
			"their dedupe id (each replay has its own, EVENT_ID/replay-N, so a publication of this replay was retried "+
			"after its acknowledgement was lost, and consumers got it once)", o.Duplicates))
	}
	if o.Pending > 0 {
		o.Why = append(o.Why, fmt.Sprintf("%d not published within %s: is `herald run` running, the lane not paused "+
			"and its broker up? (herald status)", o.Pending, wait))
	}
	if o.Dead > 0 {
		o.Why = append(o.Why, fmt.Sprintf("%d failed again and are dead (herald dead list)", o.Dead))
	}
}
