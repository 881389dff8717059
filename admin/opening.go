package admin

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store"
)

// Opening is a store that is still being opened while the server already
// serves (`herald run` starts its probes before its databases answer).
// Until Opened, the store's lanes are reported awaited: /readyz answers
// 503 naming the store and why, herald_store_up is 0, its lanes' counts
// are absent and API calls on them answer 503. It is safe for concurrent
// use.
type Opening struct {
	mu    sync.Mutex
	st    store.Store
	since time.Time
	err   string
}

// NewOpening returns an Opening whose wait begins now.
func NewOpening() *Opening { return &Opening{since: time.Now()} }

// Failed records why the latest try to open the store failed.
func (o *Opening) Failed(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.err = err.Error()
}

// Opened hands over the store, now open.
func (o *Opening) Opened(st store.Store) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.st = st
}

// errNotOpen is wrapped by the error of a store that is not open yet.
var errNotOpen = errors.New("not reachable yet")

// get returns the store, or an error saying since when it is awaited and
// why.
func (o *Opening) get() (store.Store, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.st != nil {
		return o.st, nil
	}
	since := o.since.UTC().Format(time.RFC3339)
	if o.err == "" {
		return nil, fmt.Errorf("%w (opening since %s)", errNotOpen, since)
	}
	return nil, fmt.Errorf("%w (waiting since %s): %s", errNotOpen, since, o.err)
}

// open returns the store's database, or an error naming the store when it
// is not open yet (Opening).
func (s StoreLanes) open() (store.Store, error) {
	if s.Opening == nil {
		return s.Store, nil
	}
	st, err := s.Opening.get()
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", s.Name, err)
	}
	return st, nil
}

// Unreadable is the status of s's lanes when its store cannot be read
// (err): each lane, with no counts, StoreError saying why and, as its
// state, what kind of failure that is.
func Unreadable(s StoreLanes, err error) StatusReport {
	report := StatusReport{Lanes: make([]LaneStatus, 0, len(s.Lanes)), Unselected: []TableUnselected{}}
	state := unreadableState(err)
	for _, l := range s.Lanes {
		report.Lanes = append(report.Lanes, LaneStatus{Name: l.Name, Store: s.Name, Table: l.Table,
			StoreError: err.Error(), unreadable: state})
	}
	for _, p := range s.Projections {
		report.Projections = append(report.Projections, ProjectionStatus{Name: p.Name, Store: s.Name, Table: p.Table,
			Behind: -1, LagSeconds: -1, StoreError: err.Error()})
	}
	return report
}

// unreadableState names the kind of a store's failure in a few words.
func unreadableState(err error) string {
	switch {
	case errors.Is(err, errNotOpen):
		return "store not reachable yet"
	case broker.Unreachable(err) || herald.IsUnavailable(err):
		return "store unreachable"
	case errors.Is(err, store.ErrSchema):
		return "not migrated"
	}
	return "store unreadable"
}
