package relay

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// settle publishes recs until each is delivered, failed or handed over
// (while the broker is down it waits for the breaker, keeping the batch),
// then hands the failures over and returns the deliveries to mark. An error
// (or ctx ending) means the batch must not be recorded. read is when the
// stream returned the batch.
func (r *logReader) settle(ctx context.Context, recs []store.Record, read time.Time, stats *BatchStats) ([]store.Delivery, error) {
	b := newBatch(r.w, recs, read)
	r.parkUpFront(b)
	start := time.Now()
	for {
		r.parkBehindFailures(b)
		if len(b.pendingIndexes()) == 0 {
			break
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		ok, probe, wait := r.w.breaker.admit()
		if !ok {
			r.wait(ctx, min(wait, r.w.lane.PollInterval))
			continue
		}
		b.probe = probe
		b.publish(ctx, time.Now().Add(r.w.lane.Lease))
		if probe {
			r.w.breaker.probeDone()
		}
	}
	stats.Publish = time.Since(start)
	return r.finish(ctx, b, stats)
}

// parkUpFront hands over, unpublished, the events of parked keys and
// delayed events (available_at after created_at: the polling workers
// publish them when due); on ordered lanes a delayed event parks its key.
func (r *logReader) parkUpFront(b *batch) {
	ordered := r.w.lane.Ordering == OrderingKey
	r.parkMu.Lock()
	defer r.parkMu.Unlock()
	for i := range b.items {
		it := &b.items[i]
		key := [2]string{it.rec.Event.Tenant, it.rec.Event.PartitionKey}
		delayed := it.rec.AvailableAt.After(it.rec.Event.CreatedAt)
		parked := ordered && key[1] != "" && r.parked[key]
		if it.outcome != unpublished || (!delayed && !parked) {
			continue
		}
		it.outcome = handedOver
		if ordered && key[1] != "" {
			r.parked[key] = true
		}
	}
}

// parkBehindFailures, on ordered lanes, hands over the unpublished events
// that come after a failed or handed-over event of their key, and parks the
// key: they must not overtake it.
func (r *logReader) parkBehindFailures(b *batch) {
	if r.w.lane.Ordering != OrderingKey {
		return
	}
	r.parkMu.Lock()
	defer r.parkMu.Unlock()
	for i := range b.items {
		it := &b.items[i]
		key := [2]string{it.rec.Event.Tenant, it.rec.Event.PartitionKey}
		if key[1] == "" {
			continue
		}
		switch {
		case it.outcome == failed || it.outcome == handedOver || it.outcome == discarded:
			r.parked[key] = true
		case it.outcome == unpublished && r.parked[key]:
			it.outcome = handedOver
		}
	}
}

// finish writes the batch's failures to their rows and returns the
// deliveries to mark.
func (r *logReader) finish(ctx context.Context, b *batch, stats *BatchStats) ([]store.Delivery, error) {
	var fails []store.LogFailure
	var marks []store.Delivery
	for i := range b.items {
		it := &b.items[i]
		switch it.outcome {
		case delivered:
			stats.Delivered++
			stats.CommitToAck = append(stats.CommitToAck, b.commitToAck(it))
			if it.receipt.Duplicate {
				stats.Duplicates++
			}
			if it.rec.ID > 0 {
				marks = append(marks, store.Delivery{ID: it.rec.ID, Receipt: it.receipt})
			}
		case handedOver:
			stats.Released++
			fails = append(fails, store.LogFailure{Record: it.rec})
		case discarded:
			stats.Discarded++
			fails = append(fails, store.LogFailure{Record: it.rec, Dead: true,
				Error: fmt.Sprintf("discarded unpublished: older than discard_after (%s)", r.w.lane.DiscardAfter)})
		case failed:
			fails = append(fails, r.failure(b, it, stats))
		}
	}
	if err := r.handOver(ctx, fails); err != nil {
		return nil, err
	}
	return marks, nil
}

// failure is a failed event's hand-over: a retry after its backoff, or dead.
func (r *logReader) failure(b *batch, it *item, stats *BatchStats) store.LogFailure {
	f := store.LogFailure{Record: it.rec, Error: it.err.Error(), Attempted: true}
	if herald.IsPermanent(it.err) || it.rec.Attempts >= r.w.lane.Retry.MaxAttempts {
		f.Dead = true
		stats.Dead++
		r.w.log.Error("event dead", append(b.logAttrs(it), slog.String("error", f.Error))...)
		return f
	}
	f.RetryIn = b.nextAttempt(it)
	stats.Retried++
	r.w.log.Warn("publish failed, handed to the lane's retries", append(b.logAttrs(it),
		slog.Time("next_attempt_at", time.Now().Add(f.RetryIn)), slog.String("error", f.Error))...)
	return f
}

// handOver writes fails, trying a few times: the batch is not committed
// until they are written.
func (r *logReader) handOver(ctx context.Context, fails []store.LogFailure) error {
	if len(fails) == 0 {
		return nil
	}
	// Detached from shutdown like a mark: the events were published.
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
	defer cancel()
	var err error
	for try := 1; try <= markTries; try++ {
		if err = r.lr.HandOver(hctx, r.w.lane.Table, r.w.lane.Name, fails); err == nil {
			return nil
		}
		r.wait(hctx, time.Duration(try)*50*time.Millisecond)
	}
	return fmt.Errorf("handing over %d failed events: %w", len(fails), err)
}
