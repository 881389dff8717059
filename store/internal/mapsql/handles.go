package mapsql

import "sync"

// claimedRow is what a mark needs of a claimed row: its event id, and what
// the claim wrote into its lease owner column.
type claimedRow struct{ eventID, owner string }

// handles are the ids of claimed records on a mapped table, which has no
// numeric row id to give the relay: each claim numbers its rows, and each
// mark takes its rows' numbers back. A claim the relay never marks (its
// process died) leaves nothing behind but its entries, which the store
// drops on Close with everything else.
type handles struct {
	mu   sync.Mutex
	next int64
	rows map[int64]claimedRow
}

// add numbers a claimed row.
func (h *handles) add(r claimedRow) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rows == nil {
		h.rows = map[int64]claimedRow{}
	}
	h.next++
	h.rows[h.next] = r
	return h.next
}

// get returns the rows of ids; ok[i] is false for an id this store never
// handed out (or already took back).
func (h *handles) get(ids []int64) (rows []claimedRow, ok []bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rows, ok = make([]claimedRow, len(ids)), make([]bool, len(ids))
	for i, id := range ids {
		rows[i], ok[i] = h.rows[id]
	}
	return rows, ok
}

// forget takes ids back once their mark is done (a failed mark statement
// is tried again with the same ids).
func (h *handles) forget(ids []int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		delete(h.rows, id)
	}
}
