package admin

import (
	"context"

	"golang.org/x/time/rate"

	"github.com/heraldhq/herald/store"
)

// DefaultReplayBatch is how many rows one replay transaction changes.
const DefaultReplayBatch = 100

// ReplayOptions paces and signs a replay by query.
type ReplayOptions struct {
	// Rate is the most events per second put back to pending (0: no limit),
	// so that a large replay does not flood the broker or the consumers.
	Rate float64
	// Batch is the most rows per transaction (DefaultReplayBatch when 0;
	// never more than one second's worth at Rate).
	Batch int
	// By and Reason go into each replayed event's history.
	By, Reason string
	// Progress, when set, is told the running total after each batch.
	Progress func(replayed int64)
	// Replayed, when set, is given the row ids of each batch replayed (for
	// AwaitReplay).
	Replayed func(ids []int64)
}

// Replay replays every row q selects, in id order, in batches paced to
// o.Rate, and returns how many it replayed. When ctx ends it stops between
// batches: what it replayed stays replayed, and recorded.
func Replay(ctx context.Context, r store.QueryReplayer, q store.EventQuery, o ReplayOptions) (int64, error) {
	if err := q.ValidateReplay(); err != nil {
		return 0, err
	}
	batch := o.Batch
	if batch <= 0 {
		batch = DefaultReplayBatch
	}
	limiter := rate.NewLimiter(rate.Inf, batch)
	if o.Rate > 0 {
		batch = max(1, min(batch, int(o.Rate)))
		limiter = rate.NewLimiter(rate.Limit(o.Rate), batch)
	}
	var total, after int64
	for {
		if err := limiter.WaitN(ctx, batch); err != nil {
			return total, err
		}
		ids, err := r.ReplayNext(ctx, store.ReplayBatch{Query: q, AfterID: after, Limit: batch, By: o.By, Reason: o.Reason})
		if err != nil {
			return total, err
		}
		total += int64(len(ids))
		if len(ids) > 0 && o.Replayed != nil {
			o.Replayed(ids)
		}
		if len(ids) > 0 && o.Progress != nil {
			o.Progress(total)
		}
		if len(ids) < batch { // the query has no more rows
			return total, nil
		}
		after = ids[len(ids)-1]
	}
}

// ReplayPreview is what a dry run reports: how many rows a replay would
// take and the first of them.
type ReplayPreview struct {
	Count  int64          `json:"count"`
	Sample []EventSummary `json:"sample"`
}

// PreviewReplay counts the rows q selects and returns up to sample of
// them, changing nothing.
func PreviewReplay(ctx context.Context, r store.QueryReplayer, q store.EventQuery, sample int) (ReplayPreview, error) {
	var p ReplayPreview
	if err := q.ValidateReplay(); err != nil {
		return p, err
	}
	n, err := r.CountEvents(ctx, q)
	if err != nil {
		return p, err
	}
	recs, err := r.FindEvents(ctx, q, 0, sample)
	if err != nil {
		return p, err
	}
	p.Count, p.Sample = n, make([]EventSummary, len(recs))
	for i, rec := range recs {
		p.Sample[i] = NewEventSummary(rec)
	}
	return p, nil
}
