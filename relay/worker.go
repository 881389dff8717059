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
// batches come back full, adaptive polling otherwise.
func (w *worker) run(ctx context.Context) {
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
		n, err := w.pass(ctx)
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

// pass claims one batch and relays it, returning how many rows it claimed.
func (w *worker) pass(ctx context.Context) (int, error) {
	start := time.Now()
	token := rand.Int64()
	recs, err := w.store.Claim(ctx, store.ClaimParams{
		Scope: w.lane.scope(), Owner: w.id, Token: token, Lease: w.lane.Lease,
		Limit: w.lane.BatchSize, Ordered: w.lane.Ordering == OrderingKey,
		ParkOnDead: w.lane.OnDead == OnDeadPark,
	})
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	stats := BatchStats{Lane: w.lane.Name, Worker: w.id, Claimed: len(recs), Claim: time.Since(start)}
	// Publishing must end well inside the lease, measured from before the
	// claim was sent, so no other worker can take these rows meanwhile.
	deadline := start.Add(w.lane.Lease - w.lane.Lease/10)
	b := newBatch(w, recs)
	pubStart := time.Now()
	b.publish(ctx, deadline)
	stats.Publish = time.Since(pubStart)
	markStart := time.Now()
	b.mark(ctx, store.Fence{Table: w.lane.Table, Token: token}, &stats)
	stats.Mark = time.Since(markStart)
	w.obs.BatchDone(stats)
	return len(recs), nil
}
