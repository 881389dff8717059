package loglane

import "time"

// BusyRate is the commit rate above which a stream lingers (Linger) after
// a commit. Below it a batch per commit costs little and lingering only
// delays; above it, on a machine whose cores the producers keep busy, each
// batch's hops (read, publish, acknowledge) wait for a core, and batches a
// millisecond long make fewer of them. PostgreSQL's log lane, 8 producer
// connections: at ~920 commits/s no linger gave p50 0.36–0.41 / p99
// 9.9–15.9 ms against 1.65–1.69 / 5.1–7.1, at ~1,300/s p50 2.1–6.0 / p99
// 50–162 against 2.15–2.56 / 17.5–39.5 (docs/benchmarks.md).
const BusyRate = 1000

// busyWindow is how long a Pace counts commits before it judges the rate.
const busyWindow = 100 * time.Millisecond

// Pace tells a stream's linger from its recent commit rate: Linger while
// the last full window saw BusyRate commits a second or more, none
// otherwise. Used by one goroutine (the stream's Next).
type Pace struct {
	start   time.Time
	commits int
	busy    bool
}

// Committed counts one transaction with events.
func (p *Pace) Committed() { p.commits++ }

// Linger returns the linger for a batch starting at now, judging the rate
// once a window has passed.
func (p *Pace) Linger(now time.Time) time.Duration {
	if p.start.IsZero() {
		p.start = now
	}
	if elapsed := now.Sub(p.start); elapsed >= busyWindow {
		p.busy = float64(p.commits) >= BusyRate*elapsed.Seconds()
		p.start, p.commits = now, 0
	}
	if p.busy {
		return Linger
	}
	return 0
}
