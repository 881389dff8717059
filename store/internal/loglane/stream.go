package loglane

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/store"
)

// Earliest returns the earlier of a and b.
func Earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Steps are one database's parts of a stream's Next, over its log's
// messages of type M.
type Steps[M any] struct {
	// KeepAlive runs before each message: it takes what Record recorded
	// and renews the lease when due (Position.KeepLease).
	KeepAlive func(ctx context.Context) error
	// Receive returns the next message, or ok false once deadline passed.
	Receive func(ctx context.Context, deadline time.Time) (msg M, ok bool, err error)
	// Handle adds msg's events to b; committed is true when msg ended a
	// transaction.
	Handle func(msg M, b *store.LogBatch) (committed bool, err error)
	// Linger is how long Fill waits for more once its batch has events;
	// at 0 Receive is called with a deadline passed and returns only a
	// message it already holds.
	Linger time.Duration
}

// Linger is the wait a busy stream may take after a commit for the ones
// that follow (BusyRate). On Linux a Go timer under a millisecond sleeps a
// millisecond when the process has nothing else to do (the poller's
// timeout is in milliseconds), so a shorter linger costs as much: at 500
// commits/s a 250 µs linger gave PostgreSQL's log lane p50 1.40 ms against
// 0.33 ms without (docs/benchmarks.md).
const Linger = time.Millisecond

// Fill is store.LogStream.Next's loop: it reads whole transactions into b
// until b holds limit events, or until wait passed (s.Linger, once b has
// events). At no linger Receive is called with its deadline passed once b
// has events and returns only a message it already holds, so a lone commit
// is not held back and a burst, already read in, still fills the batch. A
// transaction cut by the deadline stays with the stream for the next call.
// idle says it stopped because no message came (or receiving failed).
func Fill[M any](ctx context.Context, s Steps[M], b *store.LogBatch, limit int, wait time.Duration) (idle bool, err error) {
	deadline := time.Now().Add(wait)
	for {
		if err := s.KeepAlive(ctx); err != nil {
			return false, err
		}
		msg, ok, err := s.Receive(ctx, deadline)
		if err != nil || !ok {
			return true, err
		}
		committed, err := s.Handle(msg, b)
		if err != nil {
			return false, err
		}
		if committed && len(b.Records) >= limit {
			return false, nil
		}
		if committed && len(b.Records) > 0 {
			deadline = Earliest(deadline, time.Now().Add(s.Linger))
		}
	}
}

// Position is a stream's recorded place in the log and its lease's
// renewal. Record runs on another goroutine than Next: it raises the
// recorded position (renewing the lease as it writes it); Next's goroutine
// takes that as Confirmed, and renews the lease itself every lease/3 while
// nothing is recorded.
type Position struct {
	recorded atomic.Uint64
	// Confirmed is the recorded position as Next last took it: every
	// transaction ending at or before it is settled.
	Confirmed uint64
	// LastRenew is when the lease was last renewed.
	LastRenew time.Time
}

// Start sets the position a stream starts at, its lease just taken.
func (p *Position) Start(pos uint64) {
	p.recorded.Store(pos)
	p.Confirmed, p.LastRenew = pos, time.Now()
}

// CatchUp takes what Record recorded as Confirmed; it reports whether that
// moved the position (Record then renewed the lease too).
func (p *Position) CatchUp() bool {
	rec := p.recorded.Load()
	if rec <= p.Confirmed {
		return false
	}
	p.Confirmed, p.LastRenew = rec, time.Now()
	return true
}

// RenewAt is when the lease is next due for renewal.
func (p *Position) RenewAt(lease time.Duration) time.Time { return p.LastRenew.Add(lease / 3) }

// KeepLease renews the lease with the confirmed position (renew) once
// lease/3 passed since its last renewal.
func (p *Position) KeepLease(ctx context.Context, lease time.Duration, renew func(ctx context.Context, pos uint64) error) error {
	if time.Now().Before(p.RenewAt(lease)) {
		return nil
	}
	if err := renew(ctx, p.Confirmed); err != nil {
		return err
	}
	p.LastRenew = time.Now()
	return nil
}

// Record is store.LogStream.Record's write: the journal of the delivered
// rows (journal) and the position end under the lease's fence (renew), in
// one transaction of inTx, so that a position never passes rows that will
// not be marked. Then it raises the recorded position to end, never back:
// a batch recorded late must not undo a later one.
func (p *Position) Record(ctx context.Context, end uint64, inTx func(ctx context.Context, f func(tx *sql.Tx) error) error,
	journal, renew func(tx *sql.Tx) error) error {
	err := inTx(ctx, func(tx *sql.Tx) error {
		if err := journal(tx); err != nil {
			return err
		}
		return renew(tx)
	})
	if err != nil {
		return err
	}
	for {
		old := p.recorded.Load()
		if end <= old || p.recorded.CompareAndSwap(old, end) {
			return nil
		}
	}
}
