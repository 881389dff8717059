package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store"
)

// outcome is what happened to one claimed row in this pass.
type outcome int

const (
	unpublished outcome = iota // not sent: released at the end of the pass
	delivered
	failed
	discarded
)

type item struct {
	rec     store.Record
	msg     broker.Message
	outcome outcome
	receipt store.Receipt
	err     error
	// acked is when the broker acked a delivered item.
	acked time.Time
}

// batch is one claim's rows on their way through publish and mark.
type batch struct {
	w     *worker
	items []item
	// probe is set on the one-row batch that probes a down broker.
	probe bool
	// claimed is when the claim was sent (or a log batch came), the point
	// the records' DueFor stands at, give or take the claim's round trip.
	claimed time.Time
}

func newBatch(w *worker, recs []store.Record, claimed time.Time) *batch {
	b := &batch{w: w, items: make([]item, len(recs)), claimed: claimed}
	for i, rec := range recs {
		it := &b.items[i]
		it.rec = rec
		if w.lane.DiscardAfter > 0 && rec.Age > w.lane.DiscardAfter {
			it.outcome = discarded
			continue
		}
		it.msg = message(w.lane, rec)
		if err := w.check(rec); err != nil {
			it.outcome, it.err = failed, err // never published: see check.go
		}
	}
	return b
}

// message is the message the lane publishes for a claimed record.
func message(l Lane, rec store.Record) broker.Message {
	return broker.Message{Event: rec.Event, Destination: l.Destination.Render(rec.Event), Attempt: rec.Attempts,
		Replay: rec.Receipt.Replay}
}

// publish sends every unpublished item: all at once on unordered lanes, in
// rounds per partition key on ordered ones. Rows it does not get to before
// shutdown or the lease deadline stay unpublished and are released.
func (b *batch) publish(ctx context.Context, deadline time.Time) {
	if b.w.lane.Ordering != OrderingKey {
		if b.canPublish(ctx, deadline) {
			b.publishRound(ctx, b.pendingIndexes())
		}
		return
	}
	queues := b.keyQueues()
	for len(queues) > 0 && b.canPublish(ctx, deadline) {
		round := make([]int, 0, len(queues))
		for _, q := range queues {
			round = append(round, q[0])
		}
		b.publishRound(ctx, round)
		next := queues[:0]
		for _, q := range queues {
			// A key whose row failed stops here: its later rows are released
			// so a retry can never be overtaken.
			if b.items[q[0]].outcome == delivered && len(q) > 1 {
				next = append(next, q[1:])
			}
		}
		queues = next
	}
}

// canPublish reports whether one more publish fits before shutdown and the
// lease deadline.
func (b *batch) canPublish(ctx context.Context, deadline time.Time) bool {
	return ctx.Err() == nil && time.Now().Add(b.w.lane.PublishTimeout).Before(deadline) &&
		(b.probe || !b.w.breaker.isOpen())
}

func (b *batch) pendingIndexes() []int {
	idx := make([]int, 0, len(b.items))
	for i := range b.items {
		if b.items[i].outcome == unpublished {
			idx = append(idx, i)
		}
	}
	return idx
}

// keyQueues groups unpublished items by partition key, in claim (= commit)
// order; items without a key are each a queue of their own. A key with an
// item refused before publishing (check) gets no queue: its later items are
// released, so they can never overtake the dead one.
func (b *batch) keyQueues() [][]int {
	var queues [][]int
	byKey := map[string]int{}
	for i := range b.items {
		key := b.items[i].rec.Event.PartitionKey
		switch {
		case b.items[i].outcome == failed && key != "":
			byKey[key] = -1
			continue
		case b.items[i].outcome != unpublished || byKey[key] < 0:
			continue
		case key == "":
			queues = append(queues, []int{i})
			continue
		}
		if q, ok := byKey[key]; ok {
			queues[q] = append(queues[q], i)
			continue
		}
		byKey[key] = len(queues)
		queues = append(queues, []int{i})
	}
	return queues
}

// publishRound publishes the given items in one Publisher call under
// publish_timeout, on a context detached from shutdown.
func (b *batch) publishRound(ctx context.Context, idx []int) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.w.lane.PublishTimeout)
	defer cancel()
	send := idx[:0:0]
	for _, i := range idx {
		if hook := b.w.lane.BeforePublish; hook != nil {
			if err := hook(pctx, b.items[i].msg); err != nil {
				b.items[i].outcome, b.items[i].err = failed, fmt.Errorf("before publish: %w", err)
				continue
			}
		}
		send = append(send, i)
	}
	if len(send) == 0 {
		return
	}
	msgs := make([]broker.Message, len(send))
	spans := make([]trace.Span, len(send))
	for j, i := range send {
		msgs[j], spans[j] = startPublishSpan(pctx, b.w.tracer, b.w.lane.Name, b.items[i].msg)
	}
	results := b.w.lane.Publisher.Publish(pctx, msgs)
	if len(results) != len(msgs) {
		err := herald.Ambiguous(fmt.Errorf("publisher returned %d results for %d messages", len(results), len(msgs)))
		results = make([]broker.Result, len(msgs))
		for j := range results {
			results[j].Err = err
		}
	}
	acked := time.Now()
	down := b.judgeRound(results)
	for j, i := range send {
		endPublishSpan(spans[j], results[j])
		it := &b.items[i]
		if down && results[j].Err != nil {
			// No answer from the broker for any: released, attempts given back.
			it.outcome, it.err = unpublished, results[j].Err
		} else if results[j].Err != nil {
			it.outcome, it.err = failed, results[j].Err
		} else {
			it.outcome, it.receipt, it.acked = delivered, results[j].Receipt, acked
			it.receipt.Replay = it.rec.Receipt.Replay // the next replay counts on from it
		}
	}
}

// commitToAck is a delivered item's time from due to ack (BatchStats). A
// claim's start precedes the database's now in it, so this may count the
// claim's round trip, never less than the true time.
func (b *batch) commitToAck(it *item) time.Duration {
	return it.rec.DueFor + it.acked.Sub(b.claimed)
}

// retryAfterError is implemented by publisher errors that carry the
// broker's own wait (an HTTP Retry-After).
type retryAfterError interface {
	RetryDelay() time.Duration
}

// nextAttempt returns the wait before a failed item's next try.
func (b *batch) nextAttempt(it *item) time.Duration {
	var ra retryAfterError
	if errors.As(it.err, &ra) && ra.RetryDelay() > 0 {
		return min(ra.RetryDelay(), b.w.lane.Retry.Max)
	}
	return b.w.lane.Retry.Backoff(it.rec.Attempts)
}

func (b *batch) logAttrs(it *item) []any {
	ev := it.rec.Event
	return []any{slog.String("event_id", ev.ID), slog.String("event_type", ev.Type),
		slog.String("partition_key", ev.PartitionKey), slog.Int("attempt", it.rec.Attempts)}
}
