// Package sqltx is how the stores run transactions: the retry loop for
// lost deadlocks and serialization conflicts, READ COMMITTED transactions,
// pool sizing, and the bound on how long a claim or mark transaction may
// sit idle on the server (TxBound).
package sqltx

import (
	"context"
	"os"
	"sync/atomic"
	"time"
)

// Bounds of TxBound; see there.
const (
	minTxBound = time.Second
	maxTxBound = 5 * time.Second
)

// TxBound is how long the server lets a claim or mark transaction of a
// lease-long claim sit idle (or wait for a lock, or for a client that no
// longer reads its result) before it ends the session, rolling the
// transaction back. Without it a relay paused or cut off inside such a
// transaction (SIGSTOP, a VM freeze, a partition) keeps its row locks, which
// other relays skip, for as long as the server keeps the connection: hours
// on MySQL and MariaDB, for ever on PostgreSQL. The lease would never apply.
//
// It is half the lease, in whole seconds (MySQL's and MariaDB's timeouts
// take seconds), at least 1 s and at most 5 s:
//   - under the lease, so that a frozen claim's rows are free again before
//     its lease would have ended, and the other half is left for another
//     relay to find them (the MySQL store looks for expired leases at most
//     every min(1 s, lease/4));
//   - at least a second: a live relay sends a transaction's statements
//     microseconds apart, so a second of silence inside one is a stalled
//     process, and a second is the servers' smallest unit. A lease under 2 s
//     therefore gets a bound of half or more of it;
//   - at most 5 s: rows a frozen claim locked but did not commit are ready
//     events nobody else can publish until the bound, whatever the lease,
//     and 5 s of silence is a stall for any lease.
//
// Ending a stalled relay's session costs it a reconnect and a failed claim
// or mark; its lease was lost by then anyway.
func TxBound(lease time.Duration) time.Duration {
	b := (lease / 2).Truncate(time.Second)
	return min(max(b, minTxBound), maxTxBound)
}

// pauseInClaimEnv names a file: when set, the process's first claim that
// locked rows creates the file and waits, inside its transaction, until the
// file is removed; then it creates the file's name plus ".done" and goes
// on. It exists for the tests that SIGSTOP a `herald run`
// process inside a claim transaction: the file tells them when that is.
// Read once at start, it costs the hot path one load.
const pauseInClaimEnv = "HERALD_TEST_PAUSE_IN_CLAIM"

var (
	pauseFile = os.Getenv(pauseInClaimEnv)
	paused    atomic.Bool
)

// PauseInClaim is the pauseInClaimEnv test hook; a claim calls it with its
// rows locked and its transaction open. Without the variable it does nothing.
func PauseInClaim(ctx context.Context) {
	if pauseFile == "" || !paused.CompareAndSwap(false, true) {
		return
	}
	if err := os.WriteFile(pauseFile, nil, 0o600); err != nil {
		return
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := os.Stat(pauseFile); err != nil {
			_ = os.WriteFile(pauseFile+".done", nil, 0o600)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SmallestBound tracks the TxBound of the shortest lease a store has
// claimed with. A store serves lanes of different leases, and its marks
// (store.Fence carries no lease) and its connections' session settings need
// one value: the smallest keeps every lane's promise. The zero value is
// ready; before any claim it reports the largest bound.
type SmallestBound struct{ v atomic.Int64 }

// Note records a claim's lease and returns the bound to apply now.
func (b *SmallestBound) Note(lease time.Duration) time.Duration {
	want := int64(TxBound(lease))
	for {
		cur := b.v.Load()
		if cur != 0 && cur <= want {
			return time.Duration(cur)
		}
		if b.v.CompareAndSwap(cur, want) {
			return time.Duration(want)
		}
	}
}

// Get returns the bound to apply, maxTxBound before any claim.
func (b *SmallestBound) Get() time.Duration {
	if v := b.v.Load(); v != 0 {
		return time.Duration(v)
	}
	return maxTxBound
}
