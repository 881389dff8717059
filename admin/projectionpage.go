package admin

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/heraldhq/herald/store"
)

// projectionShown bounds the failed and dead events a projection page
// lists (each state): the newest of up to maxDeadPage read.
const projectionShown = 100

// projRef is a configured projection with the store its ledger is in.
type projRef struct {
	ProjectionRef
	st        store.Store
	storeName string
	notOpen   error
}

// table is the projection's ledger table.
func (p projRef) table() string {
	if p.Table == "" {
		return store.DefaultProjectionTable
	}
	return p.Table
}

// openProjection finds the projection named in r's path, writing 404 for
// an unknown name (a typo never acts on nothing) and 503 while its store
// is not open yet.
func (a api) openProjection(w http.ResponseWriter, r *http.Request) (projRef, bool) {
	name := r.PathValue("projection")
	for _, s := range a.stores {
		for _, ref := range s.Projections {
			if ref.Name != name {
				continue
			}
			st, err := s.open()
			if err != nil {
				writeError(w, http.StatusServiceUnavailable, err.Error())
				return projRef{}, false
			}
			return projRef{ProjectionRef: ref, st: st, storeName: s.Name}, true
		}
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("no projection %q is configured", name))
	return projRef{}, false
}

// ProjectionEvent is one failed or dead event of a projection: its ledger
// row and the kept event (payload and headers only for callers with the
// admin token, as on the event page).
type ProjectionEvent struct {
	EventID   string                `json:"event_id"`
	State     store.ProjectionState `json:"state"`
	Attempts  int                   `json:"attempts"`
	LastError string                `json:"last_error"`
	// ChangedAt is when the row last changed (its last attempt).
	ChangedAt time.Time   `json:"changed_at"`
	Event     EventDetail `json:"event"`
}

// ProjectionDetail is GET /api/projections/{projection}: the projection's
// status and its failed and dead events, newest first.
type ProjectionDetail struct {
	ProjectionStatus
	FailedEvents []ProjectionEvent `json:"failed_events"`
	DeadEvents   []ProjectionEvent `json:"dead_events"`
}

func (a api) projection(w http.ResponseWriter, r *http.Request) {
	p, ok := a.openProjection(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), statsTimeout)
	defer cancel()
	status, err := ReadProjection(ctx, p.st, p.storeName, p.ProjectionRef)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	out := ProjectionDetail{ProjectionStatus: status}
	show := a.tokenSent(r)
	for state, dst := range map[store.ProjectionState]*[]ProjectionEvent{
		store.ProjectionFailed: &out.FailedEvents, store.ProjectionDead: &out.DeadEvents} {
		if *dst, err = newestProjectionEvents(ctx, p, state, show); err != nil {
			writeError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
	}
	writeJSON(w, out)
}

// newestProjectionEvents lists p's rows of state, newest change first.
func newestProjectionEvents(ctx context.Context, p projRef, state store.ProjectionState, show bool) ([]ProjectionEvent, error) {
	rows, err := p.st.ListProjection(ctx, store.ProjectionListParams{Table: p.table(), Projection: p.Name,
		State: state, Limit: maxDeadPage})
	if err != nil {
		return nil, fmt.Errorf("projection %s: %w", p.Name, err)
	}
	slices.Reverse(rows) // the store lists oldest change first
	rows = rows[:min(len(rows), projectionShown)]
	now := time.Now().UTC()
	out := make([]ProjectionEvent, len(rows))
	for i, row := range rows {
		d := NewEventDetail(store.Record{Event: row.Event}, nil)
		d.Tenant = row.Tenant // the ledger keys events by tenant; the kept event may not carry it
		if !show {
			d.Hide()
		}
		out[i] = ProjectionEvent{EventID: row.EventID, State: row.State, Attempts: row.Attempts,
			LastError: row.LastError, ChangedAt: now.Add(-row.Age), Event: d}
	}
	return out, nil
}
