package relay

import (
	"context"
	"sync"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/postgres"
	"github.com/heraldhq/herald/store/sqlite"
)

// looks records what a relay asked its store, for tests that wait on
// what the relay did instead of sleeping: each look for work (a claim or a
// peek) with its time, the workers that made a claim which found nothing,
// and the reads of the lanes' state (pauses).
type looks struct {
	mu         sync.Mutex
	at         []time.Time
	claims     int
	emptyBy    map[string]bool
	stateReads int
}

func (l *looks) sawLook() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, time.Now())
}

func (l *looks) sawClaim(owner string, n int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, time.Now())
	l.claims++
	if n == 0 && err == nil {
		if l.emptyBy == nil {
			l.emptyBy = map[string]bool{}
		}
		l.emptyBy[owner] = true
	}
}

func (l *looks) sawStateRead() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stateReads++
}

// claimCount is how many claims the relay made.
func (l *looks) claimCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.claims
}

// idleWorkers is how many workers made a claim that found nothing.
func (l *looks) idleWorkers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.emptyBy)
}

// stateReadCount is how many times the relay read the lanes' state.
func (l *looks) stateReadCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stateReads
}

// lastGap returns the time of the last look and how long it came after
// the one before (0 before two looks).
func (l *looks) lastGap() (last time.Time, gap time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.at)
	if n < 2 {
		return time.Time{}, 0
	}
	return l.at[n-1], l.at[n-1].Sub(l.at[n-2])
}

// watchedSQLite is a SQLite store whose claims, peeks and lane-state
// reads are recorded; embedding the store keeps its optional abilities
// (Peeker, LaneStater, ...), so the relay runs as on the store itself.
type watchedSQLite struct {
	*sqlite.Store
	looks
}

func (s *watchedSQLite) Claim(ctx context.Context, p store.ClaimParams) ([]store.Record, error) {
	recs, err := s.Store.Claim(ctx, p)
	s.sawClaim(p.Owner, len(recs), err)
	return recs, err
}

func (s *watchedSQLite) Ready(ctx context.Context, sc store.Scope) (bool, error) {
	s.sawLook()
	return s.Store.Ready(ctx, sc)
}

func (s *watchedSQLite) LaneStates(ctx context.Context) (map[string]store.LaneState, error) {
	st, err := s.Store.LaneStates(ctx)
	s.sawStateRead()
	return st, err
}

// watch records the relay's looks at the env's store from now on; call it
// before starting a relay.
func (e *env) watch() *watchedSQLite {
	e.t.Helper()
	w := &watchedSQLite{Store: e.store.(*sqlite.Store)}
	e.store = w
	return w
}

// claimsOnly is a store that cannot be peeked at: its idle workers'
// looks are claims, backing off to poll_interval.
type claimsOnly struct {
	store.Store
	looks
}

func (s *claimsOnly) Claim(ctx context.Context, p store.ClaimParams) ([]store.Record, error) {
	recs, err := s.Store.Claim(ctx, p)
	s.sawClaim(p.Owner, len(recs), err)
	return recs, err
}

// watchClaimsOnly is watch on a view of the env's store without peeks.
func (e *env) watchClaimsOnly() *claimsOnly {
	e.t.Helper()
	w := &claimsOnly{Store: e.store}
	e.store = w
	return w
}

// watchedPostgres is a PostgreSQL store whose claims are recorded, with
// its wakeups (store.Waker) but without its peeks: its idle workers look
// only when woken or at poll_interval.
type watchedPostgres struct {
	store.Store
	waker store.Waker
	looks
}

func newWatchedPostgres(s *postgres.Store) *watchedPostgres {
	return &watchedPostgres{Store: s, waker: s}
}

// Wakeups is the store's own.
func (s *watchedPostgres) Wakeups(ctx context.Context, table string) (<-chan struct{}, error) {
	return s.waker.Wakeups(ctx, table)
}

func (s *watchedPostgres) Claim(ctx context.Context, p store.ClaimParams) ([]store.Record, error) {
	recs, err := s.Store.Claim(ctx, p)
	s.sawClaim(p.Owner, len(recs), err)
	return recs, err
}
