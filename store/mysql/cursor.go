package mysql

import (
	"time"

	"github.com/heraldhq/herald/store"
)

// A claim reads pending rows in claim index order, (status, available_at,
// id), from the start of the pending range. Under a backlog the front of
// that range is the entries of rows claimed moments ago: InnoDB
// delete-marks a secondary entry when the row's status changes and purges
// it later, so each claim walks over the entries every earlier claim left.
// At READ COMMITTED a locking read takes and releases a lock on each of
// them, which made the read grow from 1 to 6-8 ms per batch of 100 over a
// drain (MariaDB 10.11, 2 cores; at REPEATABLE READ it stayed at 1 ms, but
// that isolation would hold gap locks that stop producers' inserts).
//
// So while claims come back full (a backlog), the next one starts where the
// last full one ended: the cursor. A claim that comes back short, and any
// claim once rescanEvery has passed since the cursor was set, starts from
// the beginning again and so finds every row the cursor passed over: rows of
// a transaction that committed after later rows were claimed (available_at
// is set at insert), rows a failed claim left pending, rows another
// transaction held locked. Such a row waits at most rescanEvery longer, and
// only under a backlog, where every row waits anyway. The cursor is kept
// per scope for claims that read the claim index (not ordered or tenant
// lanes, which read their own indexes), on the Store's own pool only, whose
// session settings (UTC, parseTime) make a DATETIME read back compare equal
// to what is stored.
type claimCursor struct {
	at    time.Time // available_at of the last row the full claim took
	id    int64
	until time.Time // local clock: from then on, the next claim starts over
}

// rescanEvery bounds how long a claim may go on from a cursor.
const rescanEvery = time.Second

// cursorKey returns the key of p's cursor (scopeKey, p's scope as text),
// or "" when p's claims read another index than claim or the Store has no
// pool of its own.
func (s *Store) cursorKey(p store.ClaimParams, scopeKey string) string {
	if s.multi == nil || p.Ordered || p.Tenant != "" {
		return ""
	}
	return scopeKey
}

// cursor returns the position p's next claim may start after, if any.
func (s *Store) cursor(key string) (claimCursor, bool) {
	if key == "" {
		return claimCursor{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cursors[key]
	if ok && !time.Now().Before(c.until) {
		delete(s.cursors, key)
		return claimCursor{}, false
	}
	return c, ok
}

// advanceCursor records where a claim's scan of pending rows ended: after
// a full one, its last row (the furthest, if claims ran side by side);
// after a short one, nothing, so that the next claim starts over.
func (s *Store) advanceCursor(key string, scan pendingScan) {
	if key == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !scan.full {
		delete(s.cursors, key)
		return
	}
	next := s.cursors[key]
	if next.until.IsZero() {
		next.until = time.Now().Add(rescanEvery)
	}
	if scan.last.beyond(next) {
		next.at, next.id = scan.last.at, scan.last.id
	}
	if s.cursors == nil {
		s.cursors = map[string]claimCursor{}
	}
	s.cursors[key] = next
}

// lastOf returns the position of the furthest of recs in claim index
// order: (available_at, id), available_at as the claim read it.
func lastOf(recs []store.Record) claimCursor {
	var last claimCursor
	for _, r := range recs {
		if pos := (claimCursor{at: r.AvailableAt, id: r.ID}); pos.beyond(last) {
			last = pos
		}
	}
	return last
}

// beyond reports whether c's position comes after o's in index order.
func (c claimCursor) beyond(o claimCursor) bool {
	return c.at.After(o.at) || c.at.Equal(o.at) && c.id > o.id
}

// after is the condition for claim index entries past c, in index order.
func (c claimCursor) after() (string, []any) {
	return " AND (r.available_at > ? OR r.available_at = ? AND r.id > ?)", []any{c.at, c.at, c.id}
}
