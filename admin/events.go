package admin

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/heraldhq/herald/store"
)

// EventPage is one page of GET /api/lanes/{lane}/events; NextAfter, when
// set, is the after= of the next page.
type EventPage struct {
	Events    []EventSummary `json:"events"`
	NextAfter int64          `json:"next_after,omitempty"`
	// Total counts every event that matches, on all pages.
	Total int64 `json:"total"`
}

// laneOf finds the lane named in the path or writes a 404.
func (a api) laneOf(w http.ResponseWriter, r *http.Request) (laneRef, bool) {
	lane, ok := a.lane(r.PathValue("lane"))
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no lane %q", r.PathValue("lane")))
	}
	return lane, ok
}

// openLane is laneOf for handlers that read the lane's store: a 503 while
// the store is not open yet.
func (a api) openLane(w http.ResponseWriter, r *http.Request) (laneRef, bool) {
	lane, ok := a.laneOf(w, r)
	if ok && lane.st == nil {
		writeError(w, http.StatusServiceUnavailable, lane.notOpen.Error())
		return laneRef{}, false
	}
	return lane, ok
}

// events answers GET /api/lanes/{lane}/events[?status=S&type=T&key=K
// &event_id=E&tenant=N&order=oldest|newest&after=ID&limit=N]: the lane's
// events that match, oldest first (order=newest: newest first), a page
// at a time (search by event id, key or type); after is the previous
// page's next_after, in either order.
func (a api) events(w http.ResponseWriter, r *http.Request) {
	lane, ok := a.openLane(w, r)
	if !ok {
		return
	}
	after, err := queryInt(r, "after", 0, 0, 1<<62)
	if err == nil {
		var limit int64
		if limit, err = queryInt(r, "limit", 100, 1, maxDeadPage); err == nil {
			a.eventPage(w, r, lane, after, int(limit))
			return
		}
	}
	writeError(w, http.StatusBadRequest, err.Error())
}

func (a api) eventPage(w http.ResponseWriter, r *http.Request, lane laneRef, after int64, limit int) {
	v := r.URL.Query()
	q := store.EventQuery{Scope: lane.Scope()}
	var err error
	if q.NewestFirst, err = newestFirst(v); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if s := v.Get("status"); s != "" {
		q.Statuses = []store.Status{store.Status(s)}
	}
	for param, dst := range map[string]*[]string{"type": &q.Types, "key": &q.Keys, "event_id": &q.EventIDs} {
		if s := v.Get(param); s != "" {
			*dst = []string{s}
		}
	}
	if t := v.Get("tenant"); t != "" {
		q.Tenant = t
	}
	if err = timeRange(v, &q); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err = q.Validate(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	recs, err := lane.st.Replays().FindEvents(r.Context(), q, after, limit)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	total, err := lane.st.Replays().CountEvents(r.Context(), q)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	page := EventPage{Events: make([]EventSummary, len(recs)), Total: total}
	for i, rec := range recs {
		page.Events[i] = NewEventSummary(rec)
	}
	if len(recs) == limit {
		page.NextAfter = recs[len(recs)-1].ID
	}
	writeJSON(w, page)
}

// event answers GET /api/lanes/{lane}/events/{id}: the event in full
// (payload cut at MaxPayloadShown), with its replay history. Payload and
// headers go only to callers with the admin token: without one configured,
// nobody sees them through the admin port.
func (a api) event(w http.ResponseWriter, r *http.Request) {
	lane, ok := a.openLane(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	rec, err := lane.st.Get(r.Context(), lane.Table, id)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("event %s is not in table %s (lane %s)", id, lane.Table, lane.Name))
		return
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	// A database an older Herald migrated has no history yet.
	history, _ := lane.st.Replays().ReplayHistory(r.Context(), lane.Table, id)
	d := NewEventDetail(rec, history)
	if !a.tokenSent(r) {
		d.Hide()
	}
	writeJSON(w, d)
}

// timeRange reads the since and until query parameters (RFC 3339, e.g.
// 2026-12-05T09:00:00Z) into q: events created at or after since and
// before until.
func timeRange(v url.Values, q *store.EventQuery) error {
	for param, dst := range map[string]*time.Time{"since": &q.Since, "until": &q.Until} {
		s := v.Get(param)
		if s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return fmt.Errorf("%s: %q is not an RFC 3339 time such as 2026-12-05T09:00:00Z", param, s)
		}
		*dst = t
	}
	return nil
}

// newestFirst reads the order parameter of a list: oldest (the default,
// as before it existed) or newest.
func newestFirst(v url.Values) (bool, error) {
	switch v.Get("order") {
	case "", "oldest":
		return false, nil
	case "newest":
		return true, nil
	}
	return false, fmt.Errorf("order: %q is not oldest or newest", v.Get("order"))
}
