package projector

import (
	"context"
	"time"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store"
)

// cleanupBatch bounds one retention delete.
const cleanupBatch = 1000

// maintain runs the projection's background work until ctx ends: failed
// events kept in the table are fed back to the workers when due (a
// replayed dead event, or one whose worker crashed during its backoff and
// whose source will not redeliver it), and done rows past the dedupe
// horizon are deleted.
func (p *Projector) maintain(ctx context.Context, shards []chan job) {
	t := time.NewTicker(p.cfg.SweepInterval)
	defer t.Stop()
	for {
		p.sweep(ctx, shards)
		p.cleanup(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep hands due failed rows that carry their event to the workers. The
// message's ack and nack do nothing: the row itself is the bookkeeping.
// If a worker holds the same event already, the claim lets one apply it.
func (p *Projector) sweep(ctx context.Context, shards []chan job) {
	rows, err := p.cfg.Store.ListProjection(ctx, store.ProjectionListParams{
		Table: p.cfg.Table, Projection: p.cfg.Name, State: store.ProjectionFailed, Due: true, Limit: p.cfg.BatchSize,
	})
	if err != nil {
		if ctx.Err() == nil {
			p.cfg.Logger.Warn("projector: sweep failed", "projection", p.cfg.Name, "err", err)
		}
		return
	}
	for _, r := range rows {
		if r.Event.Type == "" {
			continue // the event was never kept (a failure recorded without it)
		}
		ev, ok := p.rereadKept(ctx, r.Event)
		if !ok {
			continue // a replayed event whose attributes still cannot be read: dead again
		}
		j, w := p.dispatch(broker.Received{Event: ev}, len(shards))
		select {
		case shards[w] <- j:
		case <-ctx.Done():
			return
		}
	}
}

func (p *Projector) cleanup(ctx context.Context) {
	if p.cfg.DoneRetention <= 0 {
		return
	}
	for ctx.Err() == nil {
		n, err := p.cfg.Store.CleanupProjection(ctx, p.cfg.Table, p.cfg.Name, p.cfg.DoneRetention, cleanupBatch)
		if err != nil {
			if ctx.Err() == nil {
				p.cfg.Logger.Warn("projector: retention cleanup failed", "projection", p.cfg.Name, "err", err)
			}
			return
		}
		if n < cleanupBatch {
			return
		}
	}
}
