package relay

import (
	"context"
	"sync"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/postgres"
	"github.com/heraldhq/herald/store/sqlite"
)

// looks records the claims a relay made, for tests that wait on what the
// relay did instead of sleeping (the part of relay/watch_test.go that the
// tests here use): how many, and the workers whose claim found nothing.
type looks struct {
	mu      sync.Mutex
	claims  int
	emptyBy map[string]bool
}

func (l *looks) sawClaim(owner string, n int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.claims++
	if n == 0 && err == nil {
		if l.emptyBy == nil {
			l.emptyBy = map[string]bool{}
		}
		l.emptyBy[owner] = true
	}
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

// watchedSQLite is a SQLite store whose claims are recorded; embedding the
// store keeps its optional abilities (Peeker, LaneStater, ...), so the
// relay runs as on the store itself.
type watchedSQLite struct {
	*sqlite.Store
	looks
}

func (s *watchedSQLite) Claim(ctx context.Context, p store.ClaimParams) ([]store.Record, error) {
	recs, err := s.Store.Claim(ctx, p)
	s.sawClaim(p.Owner, len(recs), err)
	return recs, err
}

// watch records the relay's claims on the env's store from now on; call it
// before starting a relay.
func (e *env) watch() *watchedSQLite {
	e.t.Helper()
	w := &watchedSQLite{Store: e.store.(*sqlite.Store)}
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
