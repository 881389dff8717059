package relay

import (
	"context"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/store"
)

// recordReq is one settled batch for the recorder: its position, its
// delivered rows and its stats (reported once recorded).
type recordReq struct {
	end   uint64
	marks []store.Delivery
	stats BatchStats
}

// recorder writes settled batches' marks and positions (LogStream.Record)
// behind the reader, so that reading and publishing the next batch overlap
// the write. Requests waiting together are written in one transaction. On
// a failure it stops the stream (fail) and records nothing more: a later
// position must not pass marks that were not written.
type recorder struct {
	in   chan recordReq
	done chan struct{}
	// recorded is kicked after each write with deliveries (the marker's cue).
	recorded chan<- struct{}
}

func startRecorder(ctx context.Context, fail context.CancelCauseFunc, st store.LogStream, w *worker, recorded chan<- struct{}) *recorder {
	rc := &recorder{in: make(chan recordReq, markQueue), done: make(chan struct{}), recorded: recorded}
	go func() {
		defer close(rc.done)
		failed := false
		for req := range rc.in {
			reqs := rc.gather(req)
			if failed {
				continue
			}
			if err := rc.write(ctx, st, reqs, w); err != nil {
				failed = true
				fail(err)
			}
		}
	}()
	return rc
}

// gather takes the requests waiting behind req.
func (rc *recorder) gather(req recordReq) []recordReq {
	reqs := []recordReq{req}
	for {
		select {
		case more, ok := <-rc.in:
			if !ok {
				return reqs
			}
			reqs = append(reqs, more)
		default:
			return reqs
		}
	}
}

// write records reqs in one transaction, detached from shutdown (their
// events are published: not recording them would publish them again).
func (rc *recorder) write(ctx context.Context, st store.LogStream, reqs []recordReq, w *worker) error {
	var marks []store.Delivery
	var end uint64
	for _, r := range reqs {
		marks = append(marks, r.marks...)
		end = max(end, r.end)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
	defer cancel()
	start := time.Now()
	if err := st.Record(wctx, end, marks); err != nil {
		w.log.Warn("cannot record the log lane's position; its unrecorded batches will be published again",
			slog.String("error", err.Error()))
		return err
	}
	took := time.Since(start)
	if len(marks) > 0 {
		select {
		case rc.recorded <- struct{}{}:
		default:
		}
	}
	for _, r := range reqs {
		if r.stats.Claimed > 0 {
			r.stats.Mark = took
			w.obs.BatchDone(r.stats)
		}
	}
	return nil
}

// send queues req (blocking while the recorder is behind: back-pressure)
// and reports whether it did; once it did not (ctx ended), no later
// request may be sent: its position would pass req's unwritten marks.
func (rc *recorder) send(ctx context.Context, req recordReq) bool {
	select {
	case rc.in <- req: // preferred to ctx's end: the batch is settled
		return true
	default:
	}
	select {
	case rc.in <- req:
		return true
	case <-ctx.Done():
		return false
	}
}

// close writes what is queued and waits for the recorder to finish.
func (rc *recorder) close() {
	close(rc.in)
	<-rc.done
}

// logMarkBatches is how many journaled batches one ApplyMarks takes.
const logMarkBatches = 8

// runMarker applies the lane's journaled marks (LogReader.ApplyMarks) after
// each recorded batch and every poll interval, until ctx ends: off the hot
// path, so that status, dead, the dashboard and retention see delivered
// rows as on a polling lane. Failures are logged once and retried.
func runMarker(ctx context.Context, lr store.LogReader, w *worker, recorded <-chan struct{}) {
	t := time.NewTicker(w.lane.PollInterval)
	defer t.Stop()
	failing := false
	for {
		for ctx.Err() == nil {
			n, err := lr.ApplyMarks(ctx, w.lane.Table, w.lane.Name, logMarkBatches, w.lane.OnDelivered == OnDeliveredDelete)
			if err != nil && ctx.Err() == nil && !failing {
				w.log.Warn("cannot mark log events delivered yet; retrying (they are published)", slog.String("error", err.Error()))
			}
			failing = err != nil
			if err != nil || n < logMarkBatches {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-recorded:
		case <-t.C:
		}
	}
}
