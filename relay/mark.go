package relay

import (
	"context"
	"log/slog"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// markTimeout bounds the marking of one batch after shutdown began.
const markTimeout = 10 * time.Second

// markTries is how often a failed mark statement is tried before the rows
// are left to their lease (they are then published again: at least once).
const markTries = 3

// mark records every item's outcome under the claim's fence, on a context
// detached from shutdown so outcomes of finished publishes are never lost.
func (b *batch) mark(ctx context.Context, f store.Fence, stats *BatchStats) {
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
	defer cancel()
	var (
		deliveries         []store.Delivery
		retries, kills     []store.Failure
		releases, discards []int64
	)
	for i := range b.items {
		it := &b.items[i]
		switch it.outcome {
		case delivered:
			deliveries = append(deliveries, store.Delivery{ID: it.rec.ID, Receipt: it.receipt})
			stats.CommitToAck = append(stats.CommitToAck, b.commitToAck(it))
			if it.receipt.Duplicate {
				stats.Duplicates++
			}
		case unpublished:
			releases = append(releases, it.rec.ID)
		case discarded:
			discards = append(discards, it.rec.ID)
			b.w.log.Info("stale event discarded", append(b.logAttrs(it), slog.Duration("age", it.rec.Age))...)
		case failed:
			if herald.IsPermanent(it.err) || it.rec.Attempts >= b.w.lane.Retry.MaxAttempts {
				kills = append(kills, store.Failure{ID: it.rec.ID, Error: it.err.Error()})
				b.w.log.Error("event dead", append(b.logAttrs(it), slog.String("error", it.err.Error()))...)
				continue
			}
			wait := b.nextAttempt(it)
			retries = append(retries, store.Failure{ID: it.rec.ID, Error: it.err.Error(), RetryIn: wait})
			b.w.log.Warn("publish failed, will retry", append(b.logAttrs(it),
				slog.Time("next_attempt_at", time.Now().Add(wait)), slog.String("error", it.err.Error()))...)
		}
	}
	stats.Delivered, stats.Retried, stats.Dead = len(deliveries), len(retries), len(kills)
	stats.Released, stats.Discarded = len(releases), len(discards)
	s := b.w.store
	stats.Lost += b.apply(mctx, "complete", len(deliveries), func() ([]int64, error) { return s.Complete(mctx, f, deliveries) })
	stats.Lost += b.apply(mctx, "retry", len(retries), func() ([]int64, error) { return s.Retry(mctx, f, retries) })
	stats.Lost += b.apply(mctx, "kill", len(kills), func() ([]int64, error) { return s.Kill(mctx, f, kills) })
	stats.Lost += b.apply(mctx, "release", len(releases), func() ([]int64, error) { return s.Release(mctx, f, releases) })
	stats.Lost += b.apply(mctx, "discard", len(discards), func() ([]int64, error) { return s.Discard(mctx, f, discards) })
}

// apply runs one mark statement (if it has rows), trying again on errors,
// and returns how many rows were lost to another worker.
func (b *batch) apply(ctx context.Context, what string, n int, op func() ([]int64, error)) int {
	if n == 0 {
		return 0
	}
	var err error
	for try := 1; try <= markTries; try++ {
		var lost []int64
		if lost, err = op(); err == nil {
			if len(lost) > 0 {
				// Our lease ran out and another worker took these rows: its
				// outcome wins, we change nothing.
				b.w.log.Warn("lease lost before "+what, slog.Int("rows", len(lost)), slog.Any("ids", lost))
			}
			return len(lost)
		}
		select {
		case <-ctx.Done():
			try = markTries
		case <-time.After(time.Duration(try) * 50 * time.Millisecond):
		}
	}
	b.w.log.Error("cannot mark "+what+"; the rows will be retried when their lease ends",
		slog.Int("rows", n), slog.String("error", err.Error()))
	return 0
}
