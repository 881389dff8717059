package mapsql

import (
	"sync"
	"time"

	"github.com/heraldhq/herald/store"
)

// A claim that reads one range per pending value pays a statement, and on
// MySQL/MariaDB a round trip, for every value, also for a retry value
// that has no due rows, which under a backlog of new rows is every claim:
// three round trips where Herald's own table's claim takes two. So after
// a read of a pending value other than the first (the one a service
// inserts rows with) came back empty, claims skip that value for
// quietPause: a row that becomes due in that time (a retry whose backoff
// ended, a row the old worker put back) is claimed up to quietPause
// later. A read that finds rows ends the pause at once. The first value is
// never skipped, so new rows wait for nothing, and neither does the look
// for expired leases, which has its own pace (claimOrder).

// quietPause is how long claims skip a retry value whose read was empty.
const quietPause = 100 * time.Millisecond

// quietValues are, by quietKey, the values claims skip and until when.
type quietValues struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// skip reports whether claims skip the value of key now.
func (q *quietValues) skip(key string) bool {
	if key == "" {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	until, ok := q.until[key]
	return ok && time.Now().Before(until)
}

// note records the outcome of a read of key's value: empty starts a
// pause, rows end it.
func (q *quietValues) note(key string, empty bool) {
	if key == "" {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if !empty {
		delete(q.until, key)
		return
	}
	if q.until == nil {
		q.until = map[string]time.Time{}
	}
	q.until[key] = time.Now().Add(quietPause)
}

// quietKey is the key under which reads of status in scope may pause, or
// "" for a value they never skip: the first pending value and the
// in-flight one.
func (t *Table) quietKey(status string, scope store.Scope) string {
	if status == t.m.Statuses.Pending[0] || status == t.m.Statuses.InFlight {
		return ""
	}
	return rangeKey(status, scope)
}
