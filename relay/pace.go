package relay

import (
	"context"
	"time"

	"github.com/heraldhq/herald/store"
)

const (
	// minPoll is the first re-poll delay after a wakeup or activity on a
	// store that cannot be peeked at. Enqueue signals this process's
	// workers before its transaction commits, so a worker woken too early
	// looks again after 1, 2, 4, … ms, backing off to the lane's
	// poll_interval.
	minPoll = time.Millisecond
	// activePoll is how often a worker peeks (store.Peeker) while its lane
	// is active: another process's commit is only seen by looking, and at
	// a few hundred events per second a millisecond step was most of the
	// latency. A peek is one indexed read, a fifth of an empty claim.
	activePoll = 500 * time.Microsecond
	// activeWindow is how long after its last claimed row a worker keeps
	// peeking every activePoll before backing off.
	activeWindow = 200 * time.Millisecond
	// idlePeek is the longest pause between two peeks of an idle lane: the
	// most an event committed by another process without a wakeup waits
	// for an idle relay to look. A peek is one indexed read; at this pace
	// an idle worker costs its database about 20 reads a second. Claims
	// (which also find expired leases) still come every poll_interval.
	idlePeek = 50 * time.Millisecond
)

// pacer decides when a worker claims next: at once after a full batch, on
// a wakeup, and otherwise by polling that is short after activity and backs
// off when idle. On a store that can be peeked at (store.Peeker) the looks
// are peeks, every activePoll while the lane is active and backing off to
// idlePeek when idle, and only a peek that finds rows leads to a claim; a
// claim still comes every poll_interval, which is also when expired leases
// are found. So a row that another process commits without a wakeup waits
// at most idlePeek for an idle relay. On a store without peeks the polls
// are claims, backing off to poll_interval. A store that notifies commits
// (store.Waker) wakes the worker at once besides; without peeks,
// poll_interval is then its only other look.
type pacer struct {
	w         *worker
	peeker    store.Peeker
	delay     time.Duration // before the next look; 0: claim at once
	idle      time.Duration // the next step of the idle back-off
	lastRows  time.Time     // when a claim last returned rows
	lastClaim time.Time     // when the worker last claimed
}

func newPacer(w *worker) *pacer {
	p := &pacer{w: w, idle: minPoll, lastClaim: time.Now()}
	// A peek asks whether the lane has ready rows, which it always has
	// while a backlog drains: it tells a fair lane's express worker
	// (express.go) nothing, so that one claims on wakeups and backs off.
	// Nor does it tell a log lane's workers anything (see handedOverOnly).
	if pk, ok := w.store.(store.Peeker); ok && !w.express && !handedOverOnly(w) {
		p.peeker = pk
	}
	return p
}

// awaitWork returns when the worker should claim, false when ctx ended.
func (p *pacer) awaitWork(ctx context.Context) bool {
	for p.delay > 0 {
		woke, ok := p.w.wait(ctx, p.delay)
		switch {
		case !ok:
			return false
		case !woke && p.othersLookedLately():
			continue
		case p.peeker == nil || time.Since(p.lastClaim) >= p.w.lane.PollInterval:
			if woke {
				p.idle = minPoll
			}
			return true
		}
		if woke {
			// This process enqueued, maybe not committed yet: poll it
			// closely from here.
			p.lastRows = time.Now()
		}
		if p.ready(ctx) {
			return true
		}
		p.delay = p.emptyDelay()
	}
	return ctx.Err() == nil
}

// ready peeks at the lane's rows; an error counts as ready, so the claim
// runs and reports it.
func (p *pacer) ready(ctx context.Context) bool {
	ok, err := p.peeker.Ready(ctx, p.w.lane.Scope())
	return ok || err != nil
}

// claimed sets the delay before the next look after a claim that returned
// n rows or failed.
func (p *pacer) claimed(n int, err error) {
	lane := p.w.lane
	p.lastClaim = time.Now()
	switch {
	case err != nil:
		p.idle = min(max(p.idle*2, 100*time.Millisecond), lane.PollInterval)
		p.delay = p.idle
	case n >= lane.BatchSize:
		p.delay, p.idle = 0, minPoll
	case n == 0 && handedOverOnly(p.w):
		p.delay = lane.PollInterval
	case n == 0 && p.w.express && !p.w.expr.servedLately(time.Now()):
		p.delay = p.expressIdleDelay()
	case p.w.notified && p.peeker == nil:
		p.delay, p.idle = lane.PollInterval, minPoll
	case n > 0:
		p.lastRows = time.Now()
		p.delay, p.idle = p.activeStep(), minPoll
	default:
		p.delay = p.emptyDelay()
	}
}

// emptyDelay is the delay after a look that found nothing: activePoll
// while the lane was active within activeWindow, else the idle back-off.
func (p *pacer) emptyDelay() time.Duration {
	if p.peeker != nil && time.Since(p.lastRows) < activeWindow {
		return activePoll
	}
	ceiling := p.w.lane.PollInterval
	if p.peeker != nil {
		ceiling = min(ceiling, idlePeek)
	}
	d := min(p.idle, ceiling)
	p.idle = min(p.idle*2, ceiling)
	return d
}

// expressIdleDelay is the delay after an express worker's look that found
// no quiet tenant while it has served none within expressMemory: the usual
// one up to poll_interval (on a store without notifications, the short
// looks after a wakeup that came before its commit), then doubling up to
// expressIdlePoll. A wakeup starts it over. Each look lists the lane's
// tenants: while one tenant drained a backlog alone, looking every 20 ms
// cost it about 7 % of its rate on PostgreSQL (docs/scaling.md). What a
// longer pause delays is a quiet tenant's first event after a quiet second
// when no commit wakes the worker (another process's, on a store without
// notifications).
func (p *pacer) expressIdleDelay() time.Duration {
	poll := p.w.lane.PollInterval
	if !p.w.notified && p.idle < poll {
		return p.emptyDelay()
	}
	d := max(poll, min(p.idle, expressIdlePoll))
	p.idle = min(max(p.idle, poll)*2, max(poll, expressIdlePoll))
	return d
}

// othersLookedLately, on a log lane's worker, reports whether one of the
// lane's workers claimed (or began to) within the last poll interval, and
// then sets the delay to the rest of that interval; otherwise it takes the
// turn: one claim an interval answers for all of them.
func (p *pacer) othersLookedLately() bool {
	if p.w.lastTurn == nil {
		return false
	}
	last, now := p.w.lastTurn.Load(), time.Now()
	since := now.Sub(time.Unix(0, last))
	if since >= p.w.lane.PollInterval && p.w.lastTurn.CompareAndSwap(last, now.UnixNano()) {
		return false
	}
	p.delay = max(p.w.lane.PollInterval-since, minPoll)
	return true
}

// handedOverOnly reports a log lane's polling worker, which claims only
// the rows its reader handed over (store.ClaimParams.HandedOver): failed
// events waiting for their retry, the events parked behind them, stray
// rows, replayed dead rows. Nearly all of the lane's pending rows are
// fresh ones that the reader publishes from the log, so a peek (is any
// row due?) says yes all through a drain, and the claim finds the few
// handed-over rows only by reading every pending row (no index holds
// lease_owner). Peeking and claiming after every empty look took most of
// the database's CPU in a log lane's drain (docs/benchmarks.md), so the
// lane's workers claim once per poll_interval between them, and at once
// again only after a claim that returned rows.
func handedOverOnly(w *worker) bool { return w.lane.Source == SourceLog }

func (p *pacer) activeStep() time.Duration {
	if p.peeker != nil {
		return activePoll
	}
	return minPoll
}
