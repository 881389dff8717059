package relay

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store"
)

// minPoll is the first re-poll delay after activity or a wakeup. Enqueue
// signals before its transaction commits, so a worker woken too early looks
// again after 1, 2, 4, … ms, backing off to the lane's poll_interval.
const minPoll = time.Millisecond

// worker is one claim → publish → mark loop of a lane.
type worker struct {
	store      store.Store
	lane       Lane
	id         string
	wake       <-chan struct{}
	log        *slog.Logger
	obs        Observer
	maxPayload int
}

func newWorker(cfg Config, lane Lane, id string, wake <-chan struct{}, log *slog.Logger) *worker {
	w := &worker{store: cfg.Store, lane: lane, id: id, wake: wake, obs: cfg.Observer,
		log: log.With(slog.String("worker", id))}
	if l, ok := lane.Publisher.(broker.Limiter); ok {
		w.maxPayload = l.MaxPayload()
	}
	return w
}

// run loops until ctx ends: an immediate first pass, then at once while
// batches come back full, adaptive polling otherwise. Claiming and
// publishing overlap: while one batch is being published and marked, the
// next is claimed, so the database and the broker work at the same time.
// On an ordered lane this cannot reorder a key: the batch in flight holds
// live leases, which keep its keys' later rows out of the next claim.
func (w *worker) run(ctx context.Context) {
	handoff := make(chan *claimed)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range handoff {
			w.deliver(ctx, c)
		}
	}()
	w.claimLoop(ctx, handoff)
	close(handoff)
	<-done
}

func (w *worker) claimLoop(ctx context.Context, handoff chan<- *claimed) {
	idle := minPoll
	var delay time.Duration
	for {
		if delay > 0 {
			woke, ok := w.wait(ctx, delay)
			if !ok {
				return
			}
			if woke {
				idle = minPoll
			}
		}
		if ctx.Err() != nil {
			return
		}
		c, err := w.claim(ctx)
		n := 0
		if c != nil {
			n = len(c.batch.items)
			w.handOff(ctx, handoff, c)
		}
		switch {
		case err != nil:
			if ctx.Err() == nil {
				w.log.Error("claim failed", slog.String("error", err.Error()))
			}
			idle = min(max(idle*2, 100*time.Millisecond), w.lane.PollInterval)
			delay = idle
		case n >= w.lane.BatchSize:
			delay, idle = 0, minPoll
		case n > 0:
			delay, idle = minPoll, minPoll
		default:
			delay, idle = idle, min(idle*2, w.lane.PollInterval)
		}
	}
}

// handOff passes c to the publishing side; on shutdown it is delivered
// right here instead, which (the context being done) releases its rows.
func (w *worker) handOff(ctx context.Context, handoff chan<- *claimed, c *claimed) {
	select {
	case handoff <- c:
	case <-ctx.Done():
		w.deliver(ctx, c)
	}
}

// wait sleeps for d or until a wakeup; ok is false when ctx ended.
func (w *worker) wait(ctx context.Context, d time.Duration) (woke, ok bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, false
	case <-w.wake:
		return true, true
	case <-t.C:
		return false, true
	}
}

// claimed is a claimed batch on its way to the broker.
type claimed struct {
	batch *batch
	fence store.Fence
	// deadline is when publishing must be over: the lease's end measured
	// from before the claim was sent, less a safety margin, so no other
	// worker can take these rows meanwhile.
	deadline time.Time
	stats    BatchStats
}

// claim claims one batch; nil when there was nothing to claim.
func (w *worker) claim(ctx context.Context) (*claimed, error) {
	start := time.Now()
	token := rand.Int64()
	recs, err := w.store.Claim(ctx, store.ClaimParams{
		Scope: w.lane.scope(), Owner: w.id, Token: token, Lease: w.lane.Lease,
		Limit: w.lane.BatchSize, Ordered: w.lane.Ordering == OrderingKey,
		ParkOnDead: w.lane.OnDead == OnDeadPark,
	})
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	return &claimed{
		batch:    newBatch(w, recs),
		fence:    store.Fence{Table: w.lane.Table, Token: token},
		deadline: start.Add(w.lane.Lease - w.lane.Lease/10),
		stats:    BatchStats{Lane: w.lane.Name, Worker: w.id, Claimed: len(recs), Claim: time.Since(start)},
	}, nil
}

// deliver publishes a claimed batch and marks the outcomes.
func (w *worker) deliver(ctx context.Context, c *claimed) {
	pubStart := time.Now()
	c.batch.publish(ctx, c.deadline)
	c.stats.Publish = time.Since(pubStart)
	markStart := time.Now()
	c.batch.mark(ctx, c.fence, &c.stats)
	c.stats.Mark = time.Since(markStart)
	w.obs.BatchDone(c.stats)
}
