package relay

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store"
)

// worker is one claim → publish → mark loop of a lane.
type worker struct {
	store      store.Store
	lane       Lane
	id         string
	wake       <-chan struct{}
	log        *slog.Logger
	obs        Observer
	maxPayload int
	// notified is true when the store wakes the worker on every commit.
	notified bool
	tracer   trace.Tracer
	// breaker is the lane's broker's, shared with other lanes on it.
	breaker *breaker
	health  *Health
	// paused is set while an operator has paused the lane.
	paused *atomic.Bool
	// fair is what each tenant got in the last fair claim (fair.go);
	// fairList the tenants listed at fairListed, which it claims for.
	fair       fairShares
	fairList   []string
	fairListed time.Time
	// busy is shared by a fair lane's workers; express is set on the one
	// worker that claims only for quiet tenants (express.go).
	busy    *busyTenants
	express bool
	expr    expressState
	// lastTurn is, on a log lane, shared by its workers: when one last
	// began a claim after waiting (UnixNano; pace.go).
	lastTurn *atomic.Int64
}

func newWorker(cfg Config, lane Lane, id string, wake <-chan struct{}, log *slog.Logger) *worker {
	w := &worker{store: cfg.Store, lane: lane, id: id, wake: wake, obs: cfg.Observer,
		log: log.With(slog.String("worker", id)), tracer: cfg.TracerProvider.Tracer(tracerName),
		health: cfg.Health}
	if l, ok := lane.Publisher.(broker.Limiter); ok {
		w.maxPayload = l.MaxPayload()
	}
	_, w.notified = cfg.Store.(store.Waker)
	return w
}

// markQueue is how many published batches may wait for their marks. A mark
// waits for the claim's commit (store.ClaimParams.AsyncCommit) and then its
// own; without a queue, one slow mark held up the next publish and claim,
// and at 500 events/s on MariaDB that was the latency's tail.
const markQueue = 4

// run loops until ctx ends: an immediate first pass, then at once while
// batches come back full, adaptive polling otherwise. Claiming, publishing
// and marking form a pipeline, one batch being claimed, one published and a
// few marked, so the database and the broker work at the same time. On an
// ordered lane this cannot reorder a key: batches further down the pipeline
// hold live leases, which keep their keys' later rows out of the next claim.
func (w *worker) run(ctx context.Context) {
	toPublish := make(chan *claimed)
	toMark := make(chan *claimed, markQueue)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(toMark)
		for c := range toPublish {
			w.publish(ctx, c)
			toMark <- c
		}
	})
	wg.Go(func() {
		for c := range toMark {
			w.mark(ctx, c)
		}
	})
	w.claimLoop(ctx, toPublish)
	close(toPublish)
	wg.Wait()
}

func (w *worker) claimLoop(ctx context.Context, handoff chan<- *claimed) {
	pace := newPacer(w)
	for pace.awaitWork(ctx) {
		if w.paused.Load() {
			pace.delay = w.lane.PollInterval
			continue
		}
		ok, probe, wait := w.breaker.admit()
		if !ok {
			// The broker is down and another worker probes it: claim
			// nothing, look again when the next probe is due.
			pace.delay = min(wait, w.lane.PollInterval)
			continue
		}
		c, err := w.claim(ctx, probe)
		n := 0
		if c != nil {
			n = len(c.batch.items)
			w.handOff(ctx, handoff, c)
		} else if probe && err == nil {
			// Nothing to probe with: ask the broker directly if it can be.
			w.breaker.ping(ctx, true)
		} else if probe {
			w.breaker.probeDone()
		}
		switch {
		case err == nil:
			w.health.storeOK(w.lane.Name)
		case ctx.Err() == nil:
			w.claimFailed(ctx, err)
		}
		pace.claimed(n, err)
	}
}

// handOff passes c to the publishing stage; on shutdown it is marked right
// here instead, which releases its rows, none of them published.
func (w *worker) handOff(ctx context.Context, handoff chan<- *claimed, c *claimed) {
	select {
	case handoff <- c:
	case <-ctx.Done():
		w.mark(ctx, c)
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

// claim claims one batch, of one row when it probes the lane's broker; nil
// when there was nothing to claim.
func (w *worker) claim(ctx context.Context, probe bool) (*claimed, error) {
	start := time.Now()
	token := rand.Int64()
	limit := w.lane.BatchSize
	if probe {
		limit = 1
	}
	recs, err := w.claimRows(ctx, store.ClaimParams{
		Scope: w.lane.Scope(), Owner: w.id, Token: token, Lease: w.lane.Lease,
		Limit: limit, Ordered: w.lane.Ordering == OrderingKey,
		ParkOnDead: w.lane.OnDead == OnDeadPark, AsyncCommit: true, HandedOver: w.lane.Source == SourceLog,
	}, probe)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	b := newBatch(w, recs, start)
	b.probe = probe
	return &claimed{
		batch:    b,
		fence:    store.Fence{Table: w.lane.Table, Token: token},
		deadline: start.Add(w.lane.Lease - w.lane.Lease/10),
		stats:    BatchStats{Lane: w.lane.Name, Worker: w.id, Claimed: len(recs), Claim: time.Since(start)},
	}, nil
}

// publish sends a claimed batch to the broker.
func (w *worker) publish(ctx context.Context, c *claimed) {
	start := time.Now()
	// While the broker is down only the probe is sent; the other batches'
	// rows are released unpublished, their attempts given back.
	if c.batch.probe || !w.breaker.isOpen() {
		c.batch.publish(ctx, c.deadline)
	}
	if c.batch.probe {
		w.breaker.probeDone()
	}
	c.stats.Publish = time.Since(start)
}

// mark records a published batch's outcomes and reports the pass.
func (w *worker) mark(ctx context.Context, c *claimed) {
	start := time.Now()
	c.batch.mark(ctx, c.fence, &c.stats)
	c.stats.Mark = time.Since(start)
	w.obs.BatchDone(c.stats)
}
