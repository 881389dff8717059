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
}

func startRecorder(ctx context.Context, fail context.CancelCauseFunc, st store.LogStream, w *worker) *recorder {
	rc := &recorder{in: make(chan recordReq, markQueue), done: make(chan struct{})}
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
	for _, r := range reqs {
		if r.stats.Claimed > 0 {
			r.stats.Mark = took
			w.obs.BatchDone(r.stats)
		}
	}
	return nil
}

// send queues req (blocking while the recorder is behind: back-pressure).
func (rc *recorder) send(ctx context.Context, req recordReq) {
	select {
	case rc.in <- req: // preferred to ctx's end: the batch is settled
		return
	default:
	}
	select {
	case rc.in <- req:
	case <-ctx.Done():
	}
}

// close writes what is queued and waits for the recorder to finish.
func (rc *recorder) close() {
	close(rc.in)
	<-rc.done
}
