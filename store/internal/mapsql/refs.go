package mapsql

import (
	"fmt"
	"sync"

	"github.com/heraldhq/herald/store"
)

// maxRefs bounds a table's refs: a dashboard that stays open for weeks
// pages through many rows, and a ref older than this many later ones has
// long stopped being a page's cursor.
const maxRefs = 1 << 16

// refs number the rows search, lists and replays by query return from a
// mapped table, which has no row id: store.Record.ID, an EventQuery's
// RowIDs and a batch's AfterID are these numbers, each standing for an
// event id. One event id keeps its number while it is remembered. The
// numbers are this process's: a page cursor does not outlive it.
type refs struct {
	mu     sync.Mutex
	next   int64
	byRef  map[int64]string
	byID   map[string]int64
	oldest int64 // the smallest number still remembered
}

// ref returns eventID's number, giving it one when it has none.
func (r *refs) ref(eventID string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.byID[eventID]; ok {
		return n
	}
	if r.byRef == nil {
		r.byRef, r.byID, r.oldest = map[int64]string{}, map[string]int64{}, 1
	}
	r.next++
	r.byRef[r.next], r.byID[eventID] = eventID, r.next
	for ; r.next-r.oldest >= maxRefs; r.oldest++ {
		delete(r.byID, r.byRef[r.oldest])
		delete(r.byRef, r.oldest)
	}
	return r.next
}

// eventID returns the event id numbered n; an error for a number this
// process never gave or has forgotten.
func (r *refs) eventID(n int64) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.byRef[n]
	if !ok {
		return "", fmt.Errorf("row %d: a mapped table's rows are numbered by the process that read them, and this one "+
			"does not know it (start from the first page)", n)
	}
	return id, nil
}

// eventIDs returns the event ids of the numbers it knows among ns.
func (r *refs) eventIDs(ns []int64) []string {
	var ids []string
	for _, n := range ns {
		if id, err := r.eventID(n); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// number sets each record's ID to its event id's number.
func (r *refs) number(recs []store.Record) {
	for i := range recs {
		recs[i].ID = r.ref(recs[i].Event.ID)
	}
}
