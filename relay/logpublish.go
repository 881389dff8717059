package relay

import (
	"context"

	"github.com/heraldhq/herald/store"
)

// logJob is one batch read from a lane's log on its way through publish,
// settle and record.
type logJob struct {
	f   fetched
	req recordReq
	// record is set when the batch goes to the recorder: it has events or
	// moves the position.
	record bool
	// keys are the batch's partition keys (tenant, key) on ordered lanes;
	// deps the batches before it, still being settled, that share one.
	keys map[[2]string]bool
	deps []*logJob
	err  error
	done chan struct{} // closed once settled (or failed: err)
}

// logInFlight is how many batches a log reader publishes and settles at
// once: the lane's concurrency, as many as its polling lane's workers.
func logInFlight(l Lane) int { return max(1, l.Concurrency) }

// settleAll publishes and settles the fetched batches, up to
// logInFlight of them at once, and hands them to the recorder in commit
// order, each only once it and every batch before it are settled: a
// position never passes an event not yet acknowledged, handed over or
// dead. On an ordered lane a batch that shares a key with an earlier
// batch still being settled waits for it (per-key order, and its parking).
// The first failure stops the stream (fail) and nothing after it is
// recorded; batches published but not recorded are read again next time.
func (r *logReader) settleAll(ctx context.Context, fail context.CancelCauseFunc, batches <-chan fetched, rec *recorder) error {
	n := logInFlight(r.w.lane)
	slots := make(chan struct{}, n)
	queue := make(chan *logJob, n)
	recorded := make(chan error, 1)
	go func() { recorded <- r.recordInOrder(ctx, fail, queue, slots, rec) }()
	err := r.dispatch(ctx, batches, queue, slots)
	if err != nil {
		fail(err)
	}
	close(queue)
	if rerr := <-recorded; rerr != nil {
		err = rerr
	}
	return err
}

// dispatch starts a settling goroutine per fetched batch while a slot is
// free and queues the batches in commit order for recordInOrder.
func (r *logReader) dispatch(ctx context.Context, batches <-chan fetched, queue chan<- *logJob, slots chan struct{}) error {
	lane := r.w.lane
	ordered := lane.Ordering == OrderingKey
	var sent uint64
	var running []*logJob // started, maybe not settled yet, in order
	for f := range batches {
		if r.parkedDue() {
			// Reading the parked keys must not race a batch that parked a
			// key but has not handed its events over yet.
			for _, j := range running {
				select {
				case <-j.done:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			if err := r.loadParked(ctx); err != nil {
				return err
			}
		}
		j := &logJob{f: f, done: make(chan struct{}),
			req:    recordReq{end: f.b.End, stats: BatchStats{Lane: lane.Name, Worker: r.owner, Claimed: len(f.b.Records), Claim: f.took}},
			record: f.b.End > sent || len(f.b.Records) > 0}
		if j.record {
			sent = f.b.End
		}
		running = settling(running)
		if ordered {
			j.keys, j.deps = keysOf(f.b.Records), nil
			for _, d := range running {
				if shareKey(d.keys, j.keys) {
					j.deps = append(j.deps, d)
				}
			}
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		if len(f.b.Records) == 0 {
			close(j.done)
		} else {
			running = append(running, j)
			go r.settleJob(ctx, j)
		}
		queue <- j // never blocks: a job holds a slot until it is taken off
	}
	return nil
}

// settling returns the jobs of running not settled yet.
func settling(running []*logJob) []*logJob {
	out := running[:0]
	for _, j := range running {
		select {
		case <-j.done:
		default:
			out = append(out, j)
		}
	}
	clear(running[len(out):])
	return out
}

// keysOf returns the partition keys of recs (events without one are not
// ordered).
func keysOf(recs []store.Record) map[[2]string]bool {
	keys := map[[2]string]bool{}
	for _, rec := range recs {
		if rec.Event.PartitionKey != "" {
			keys[[2]string{rec.Event.Tenant, rec.Event.PartitionKey}] = true
		}
	}
	return keys
}

func shareKey(a, b map[[2]string]bool) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	for k := range a {
		if b[k] {
			return true
		}
	}
	return false
}

// settleJob waits for the batches j depends on, then publishes and
// settles j. A failed dependency fails j unpublished: its events must not
// overtake their key's unsettled ones.
func (r *logReader) settleJob(ctx context.Context, j *logJob) {
	defer close(j.done)
	for _, d := range j.deps {
		select {
		case <-d.done:
			if d.err != nil {
				j.err = d.err
				return
			}
		case <-ctx.Done():
			j.err = ctx.Err()
			return
		}
	}
	j.req.marks, j.err = r.settle(ctx, j.f.b.Records, j.f.at, &j.req.stats)
}

// recordInOrder takes the jobs in commit order, waits until each is
// settled and sends it to the recorder. After a failure it records
// nothing more (a later position would pass the failed batch's events),
// stops the stream and waits for the jobs still running.
func (r *logReader) recordInOrder(ctx context.Context, fail context.CancelCauseFunc, queue <-chan *logJob, slots <-chan struct{}, rec *recorder) error {
	var err error
	for j := range queue {
		<-j.done
		<-slots
		switch {
		case err != nil:
		case j.err != nil:
			err = j.err
			fail(err)
		case j.record && !rec.send(ctx, j.req):
			err = ctx.Err()
		}
	}
	return err
}
