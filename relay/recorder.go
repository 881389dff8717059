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
		var last time.Time
		var lastEvents int
		for req := range rc.in {
			var wait time.Duration
			if lastEvents < recordGapBelow {
				wait = time.Until(last.Add(recordGap))
			}
			reqs := rc.gather(req, wait)
			if failed {
				continue
			}
			last, lastEvents = time.Now(), eventsOf(reqs)
			if err := rc.write(ctx, st, reqs, w); err != nil {
				failed = true
				fail(err)
			}
		}
	}()
	return rc
}

// recordGap is the least time between two of a recorder's writes while
// the last one carried fewer than recordGapBelow events: at low rates a
// log lane's batches hold an event or two each, and a write per batch (a
// transaction, with its commit's flush) cost the database more than the
// events did, and the producers' commits waited behind it. Batches settled
// meanwhile are gathered into the next write; they are published already,
// so only their position and marks wait (a crash in between publishes
// them again, as any unrecorded batch). Busy lanes, whose batches are
// large, write as soon as a batch is settled.
const (
	recordGap      = 10 * time.Millisecond
	recordGapBelow = 100
)

// eventsOf counts the events of reqs.
func eventsOf(reqs []recordReq) int {
	n := 0
	for _, r := range reqs {
		n += r.stats.Claimed
	}
	return n
}

// gather takes req, the requests that arrive within wait (none if wait
// <= 0) and those waiting after that, without ever blocking a sender.
func (rc *recorder) gather(req recordReq, wait time.Duration) []recordReq {
	reqs := []recordReq{req}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		var open bool
		if reqs, open = rc.takeUntil(reqs, t.C); !open {
			return reqs
		}
	}
	return rc.takeWaiting(reqs)
}

// takeUntil appends the requests that arrive before until fires; open is
// false once the recorder's input is closed.
func (rc *recorder) takeUntil(reqs []recordReq, until <-chan time.Time) (_ []recordReq, open bool) {
	for {
		select {
		case more, ok := <-rc.in:
			if !ok {
				return reqs, false
			}
			reqs = append(reqs, more)
		case <-until:
			return reqs, true
		}
	}
}

// takeWaiting appends the requests already waiting.
func (rc *recorder) takeWaiting(reqs []recordReq) []recordReq {
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

// strayEvery is how many poll intervals pass between two stray checks
// (LogReader.Strays), and strayLimit how many rows one samples.
const (
	strayEvery = 10
	strayLimit = 1000
)

// runMarker applies the lane's journaled marks (LogReader.ApplyMarks) after
// each recorded batch and every poll interval, until ctx ends: off the hot
// path, so that status, dead, the dashboard and retention see delivered
// rows as on a polling lane. Every strayEvery intervals it also runs the
// stray check, and reopens the reader's stream (reopen) when that found
// rows. Failures are logged once and retried.
func runMarker(ctx context.Context, lr store.LogReader, w *worker, recorded <-chan struct{}, reopen func()) {
	t := time.NewTicker(w.lane.PollInterval)
	defer t.Stop()
	m := marker{lr: lr, w: w, reopen: reopen}
	for ticks := 0; ; {
		m.applyAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-recorded:
		case <-t.C:
			if ticks++; ticks%strayEvery == 0 {
				m.checkStrays(ctx)
			}
		}
	}
}

// marker is runMarker's state: the failures already logged and the stray
// check's probe.
type marker struct {
	lr           store.LogReader
	w            *worker
	failing      bool
	strayFailing bool
	probe        store.StrayProbe
	reopen       func()
}

// applyAll applies journaled batches until fewer than logMarkBatches are
// left or ApplyMarks fails.
func (m *marker) applyAll(ctx context.Context) {
	lane := m.w.lane
	for ctx.Err() == nil {
		res, err := m.lr.ApplyMarks(ctx, lane.Table, lane.Name, logMarkBatches, lane.OnDelivered == OnDeliveredDelete)
		if err != nil && ctx.Err() == nil && !m.failing {
			m.w.log.Warn("cannot mark log events delivered yet; retrying (they are published)", slog.String("error", err.Error()))
		}
		m.failing = err != nil
		if res.Gone > 0 {
			m.w.log.Info("delivered log events whose rows were deleted before their mark", slog.Int("rows", res.Gone))
			m.w.obs.BatchDone(BatchStats{Lane: lane.Name, Worker: m.w.id, MarksGone: res.Gone})
		}
		if err != nil || res.Batches < logMarkBatches {
			return
		}
	}
}

// checkStrays runs one step of the stray check and reports the rows it
// handed over: each is a row the log lane would otherwise never settle.
func (m *marker) checkStrays(ctx context.Context) {
	probe, handed, err := m.lr.Strays(ctx, m.w.lane.Name, m.w.lane.Scope(), m.probe, strayLimit)
	if err != nil {
		if ctx.Err() == nil && !m.strayFailing {
			m.w.log.Warn("cannot check the log lane for stranded rows; retrying", slog.String("error", err.Error()))
		}
		m.strayFailing = true
		return
	}
	m.strayFailing, m.probe = false, probe
	if len(handed) == 0 {
		return
	}
	m.w.log.Warn("log lane: rows the log passed were left pending; handed to the polling workers (they may be published again)",
		slog.Int("rows", len(handed)), slog.Any("ids", handed[:min(len(handed), 20)]))
	m.w.obs.BatchDone(BatchStats{Lane: m.w.lane.Name, Worker: m.w.id, Stranded: len(handed)})
	// The stream may no longer carry the table (made again since it
	// opened); opening it again checks that and publishes the table anew.
	m.reopen()
}
