package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/heraldhq/herald/store"
)

// logRetry is the wait before a log reader opens its stream again after
// the database failed it; logLostRetry after its position was lost (the
// error is logged each time: an operator must act, docs/loglanes.md).
const (
	logRetry     = time.Second
	logLostRetry = 10 * time.Second
)

// handedOver is the outcome of a log event given to the row path unpublished
// (its key is parked behind a failed or delayed event).
const handedOver outcome = discarded + 1

// logReader is a log lane's reader: it holds the lane's lease, publishes
// the log's events in commit order through the lane's batch code, hands
// failures to the lane's polling workers and records the position once per
// batch (docs/loglanes.md).
type logReader struct {
	lr    store.LogReader
	w     *worker
	owner string
	// parked are the keys (tenant, key) with handed-over rows not finished,
	// on ordered lanes: their later events are handed over too. Batches
	// settled at once share them (parkMu).
	parkMu      sync.Mutex
	parked      map[[2]string]bool
	parkedAt    time.Time
	standingBy  bool
	reportedErr string
	// recorded is kicked when a batch with deliveries is recorded: the
	// marker's cue.
	recorded chan struct{}
	// stopStream ends the open stream (nil while none is open): reopen.
	// reopening counts the quick tries left after it.
	streamMu   sync.Mutex
	stopStream context.CancelCauseFunc
	reopening  int
}

// reopenTries × reopenWait is how long a reopened stream waits for its
// closed one's server side to let go, before it stands by as if another
// process held the lease.
const (
	reopenTries = 50
	reopenWait  = 100 * time.Millisecond
)

// errReopen ends a stream that the stray check found passing rows by: the
// store checks at each open that the log still carries the lane's table
// (on PostgreSQL a table dropped and made again has left its publication).
var errReopen = errors.New("stranded rows found: reopening the log stream")

// reopen ends the open stream, if any; run opens it again at once.
func (r *logReader) reopen() {
	r.streamMu.Lock()
	defer r.streamMu.Unlock()
	if r.stopStream != nil {
		r.stopStream(errReopen)
	}
}

// streaming sets the open stream's stop (nil once it ended).
func (r *logReader) streaming(stop context.CancelCauseFunc) {
	r.streamMu.Lock()
	r.stopStream = stop
	r.streamMu.Unlock()
}

func newLogReader(lr store.LogReader, w *worker) *logReader {
	return &logReader{lr: lr, w: w, recorded: make(chan struct{}, 1), parked: map[[2]string]bool{},
		owner: fmt.Sprintf("%s/%016x", w.id, rand.Uint64())}
}

// run opens the lane's stream whenever it can take the lease, until ctx ends.
func (r *logReader) run(ctx context.Context) {
	lane := r.w.lane
	for ctx.Err() == nil {
		st, err := r.lr.OpenLog(ctx, store.LogParams{Scope: lane.Scope(), Lane: lane.Name, Owner: r.owner, Lease: lane.Lease,
			LeaveDelivered: lane.OnDelivered == OnDeliveredLeave})
		if err == nil {
			r.standingBy, r.reportedErr, r.reopening = false, "", 0
			r.w.log.Info("log reader active", slog.String("owner", r.owner))
			err = r.relay(ctx, st)
			st.Close()
		}
		if ctx.Err() != nil {
			return
		}
		r.wait(ctx, r.pause(err))
	}
}

// pause logs err (once per kind) and returns how long to wait before the
// next try.
func (r *logReader) pause(err error) time.Duration {
	switch {
	case errors.Is(err, errReopen):
		r.w.log.Info("log reader reopening its stream: the stray check found rows it passed")
		r.reopening = reopenTries
		return 0
	case errors.Is(err, store.ErrLogLeaseHeld) && r.reopening > 0:
		r.reopening-- // the closed stream's server side may hold the log a moment longer
		return reopenWait
	case errors.Is(err, store.ErrLogLeaseHeld):
		if !r.standingBy {
			r.w.log.Info("log reader standing by: another process holds the lane's lease", slog.String("error", err.Error()))
		}
		r.standingBy = true
		return r.w.lane.Lease / 4
	case errors.Is(err, store.ErrLogPositionLost):
		r.w.log.Error("log lane stopped: its position in the database log is gone; see docs/loglanes.md (Faults) to recover",
			slog.String("error", err.Error()))
		return logLostRetry
	case errors.Is(err, store.ErrLogLeaseLost):
		r.w.log.Warn("log reader lost its lease; standing by", slog.String("error", err.Error()))
		return 0
	}
	r.w.health.storeFailed(err)
	if err.Error() != r.reportedErr {
		r.w.log.Warn("log reader failed; reopening", slog.String("error", err.Error()))
		r.reportedErr = err.Error()
	}
	return logRetry
}

func (r *logReader) wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// relay runs three stages until ctx ends or one fails: a fetcher reads
// batches from the stream, up to the lane's concurrency of batches are
// published and settled at once (logpublish.go), and a recorder writes the
// settled batches' marks and positions in commit order (recorder.go); so
// reading, publishing and recording overlap. A batch is recorded only when
// it and every batch before it are settled, each event delivered, handed
// over or dead; one cut by shutdown is read again next time.
func (r *logReader) relay(ctx context.Context, st store.LogStream) error {
	if err := r.loadParked(ctx); err != nil {
		return err
	}
	sctx, stop := context.WithCancelCause(ctx)
	r.streaming(stop)
	defer r.streaming(nil)
	rec := startRecorder(sctx, stop, st, r.w, r.recorded)
	batches := make(chan fetched, 1)
	go r.fetch(sctx, stop, st, batches)
	err := r.settleAll(sctx, stop, batches, rec)
	stop(err)
	for range batches { // the fetcher is done with the stream once it closes batches
	}
	rec.close()
	return streamErr(sctx, err)
}

// fetched is a batch read from the stream, how long the read took and
// when it ended (where its records' DueFor stands).
type fetched struct {
	b    store.LogBatch
	took time.Duration
	at   time.Time
}

// fetch reads batches into out until ctx ends or the stream fails (which
// stops the others through fail). While the lane is paused it reads
// nothing and only renews the lease.
func (r *logReader) fetch(ctx context.Context, fail context.CancelCauseFunc, st store.LogStream, out chan<- fetched) {
	defer close(out)
	lane := r.w.lane
	for ctx.Err() == nil {
		if r.w.paused.Load() {
			r.wait(ctx, lane.PollInterval)
			if err := st.Record(ctx, 0, nil); err != nil && ctx.Err() == nil {
				fail(err)
			}
			continue
		}
		start := time.Now()
		b, err := st.Next(ctx, lane.BatchSize, lane.PollInterval)
		if err != nil {
			fail(err)
			return
		}
		r.w.health.storeOK(r.w.lane.Name)
		select {
		case out <- fetched{b: b, took: time.Since(start), at: time.Now()}:
		case <-ctx.Done():
			return
		}
	}
}

// streamErr prefers the recorder's failure, which cancelled sctx, to the
// context error it caused.
func streamErr(sctx context.Context, err error) error {
	if err == nil {
		err = sctx.Err()
	}
	if cause := context.Cause(sctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// parkedDue reports whether loadParked should read the parked keys again:
// at most once per poll interval while some are parked (a key is let go
// when its handed-over rows are finished).
func (r *logReader) parkedDue() bool {
	r.parkMu.Lock()
	defer r.parkMu.Unlock()
	return r.w.lane.Ordering == OrderingKey && len(r.parked) > 0 && time.Since(r.parkedAt) >= r.w.lane.PollInterval
}

// loadParked reads the parked keys from the table (ordered lanes only).
// The caller makes sure no batch is being settled: one that parked a key
// but has not written its hand-over yet would lose the key.
func (r *logReader) loadParked(ctx context.Context) error {
	lane := r.w.lane
	if lane.Ordering != OrderingKey {
		return nil
	}
	keys, err := r.lr.HandedOverKeys(ctx, lane.Name, lane.Scope(), lane.OnDead == OnDeadPark)
	if err != nil {
		return err
	}
	parked := make(map[[2]string]bool, len(keys))
	for _, k := range keys {
		parked[k] = true
	}
	r.parkMu.Lock()
	r.parked, r.parkedAt = parked, time.Now()
	r.parkMu.Unlock()
	return nil
}

// startLogLane starts a log lane's reader (the lane's polling
// workers, for handed-over rows, are started as for other lanes).
func (r *Relay) startLogLane(ctx context.Context, lane Lane, log *slog.Logger, start func(func())) error {
	lr := r.cfg.Store.(store.LogReader) // checked by New
	if err := lr.CheckLog(ctx); err != nil {
		return fmt.Errorf("relay: lane %q (source log): %w", lane.Name, err)
	}
	w := newWorker(r.cfg, lane, fmt.Sprintf("%s/%s-log", r.cfg.Node, lane.Name), nil, log)
	w.breaker, w.paused = r.breakers[lane.Name], r.state.paused[lane.Name]
	reader := newLogReader(lr, w)
	start(func() { reader.run(ctx) })
	start(func() { runMarker(ctx, lr, w, reader.recorded, reader.reopen) })
	return nil
}
