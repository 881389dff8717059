package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// LaneStatus is one lane in `herald status --json` and GET /api/lanes (a
// contract: field names do not change).
type LaneStatus struct {
	Name string `json:"name"`
	// Store names the lane's store (config.DefaultStore for `store`).
	Store                   string  `json:"store"`
	Table                   string  `json:"table"`
	Pending                 int64   `json:"pending"`
	Retrying                int64   `json:"retrying"`
	InFlight                int64   `json:"in_flight"`
	Delivered               int64   `json:"delivered"`
	Dead                    int64   `json:"dead"`
	OldestPendingAgeSeconds float64 `json:"oldest_pending_age_seconds"`
	// Paused, PausedAt and Broker come from herald_lane_state (SetState).
	Paused   bool         `json:"paused"`
	PausedAt *time.Time   `json:"paused_at,omitempty"`
	Broker   *BrokerState `json:"broker,omitempty"`
	// StoreError, when set, says why the lane's store could not be read
	// (not reachable, not migrated): the counts are then unknown and 0.
	StoreError string `json:"store_error,omitempty"`
	// unreadable is StoreError's kind in a few words (Unreadable), the
	// state `herald status` shows.
	unreadable string
}

// NewLaneStatus is the status of lane name over table from its stats.
func NewLaneStatus(name, table string, st store.LaneStats) LaneStatus {
	return LaneStatus{Name: name, Table: table, Pending: st.Pending, Retrying: st.Retrying,
		InFlight: st.InFlight, Delivered: st.Delivered, Dead: st.Dead,
		OldestPendingAgeSeconds: st.OldestPendingAge.Seconds()}
}

// DeadSummary is one dead event in `herald dead list --json` and GET
// /api/lanes/{lane}/dead: ids, type and error, never the payload.
type DeadSummary struct {
	ID           int64     `json:"id"`
	EventID      string    `json:"event_id"`
	Type         string    `json:"type"`
	Topic        string    `json:"topic"`
	PartitionKey string    `json:"partition_key"`
	Tenant       string    `json:"tenant"`
	Attempts     int       `json:"attempts"`
	LastError    string    `json:"last_error"`
	CreatedAt    time.Time `json:"created_at"`
	// DiedAt is when the event went dead, on the database clock.
	DiedAt time.Time `json:"died_at"`
}

// NewDeadSummary summarizes a dead row.
func NewDeadSummary(r store.Record) DeadSummary {
	return DeadSummary{ID: r.ID, EventID: r.Event.ID, Type: r.Event.Type, Topic: r.Event.Topic,
		PartitionKey: r.Event.PartitionKey, Tenant: r.Event.Tenant, Attempts: r.Attempts,
		LastError: r.LastError, CreatedAt: r.Event.CreatedAt, DiedAt: r.DiedAt}
}

// maxDeadPage bounds one page of GET /api/lanes/{lane}/dead.
const maxDeadPage = 1000

// api serves the JSON API over stores and their lanes; actions need token.
type api struct {
	stores []StoreLanes
	token  string
}

// laneRef is a lane with the store it is relayed from.
type laneRef struct {
	relay.Lane
	st        store.Store
	storeName string
	// notOpen says why st is nil: the store is not open yet.
	notOpen error
}

// lanesStatus answers GET /api/lanes[?tenant=T]: each lane's rows by state,
// and each table's rows that no lane selects.
func (a api) lanesStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), statsTimeout)
	defer cancel()
	tenant := r.URL.Query().Get("tenant")
	var report StatusReport
	for _, s := range a.stores {
		// Without the state table (not migrated yet) the lanes show no state.
		part, _, err := StoreStatus(ctx, s, tenant)
		if err != nil {
			// One store that cannot be read does not hide the others.
			part = Unreadable(s, err)
		}
		report.Add(part)
	}
	writeJSON(w, report)
}

// deadList answers GET /api/lanes/{lane}/dead[?order=oldest|newest
// &after=ID&limit=N]: dead events oldest first (order=newest: newest
// first, as the lane list takes it), a page at a time; next_after
// continues, in either order.
func (a api) deadList(w http.ResponseWriter, r *http.Request) {
	lane, ok := a.openLane(w, r)
	if !ok {
		return
	}
	after, err := queryInt(r, "after", 0, 0, 1<<62)
	var limit int64
	var newest bool
	if err == nil {
		limit, err = queryInt(r, "limit", 100, 1, maxDeadPage)
	}
	if err == nil {
		newest, err = newestFirst(r.URL.Query())
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var recs []store.Record
	if newest {
		// The query reader pages down by row id (a mapped table, without
		// row ids, refuses it and says so).
		recs, err = lane.st.Replays().FindEvents(r.Context(), store.EventQuery{Scope: lane.Scope(),
			Statuses: []store.Status{store.StatusDead}, NewestFirst: true}, after, int(limit))
	} else {
		recs, err = lane.st.List(r.Context(), store.ListParams{Scope: lane.Scope(), Status: store.StatusDead,
			AfterID: after, Limit: int(limit)})
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	page := struct {
		Dead      []DeadSummary `json:"dead"`
		NextAfter int64         `json:"next_after,omitempty"`
	}{Dead: make([]DeadSummary, len(recs))}
	for i, rec := range recs {
		page.Dead[i] = NewDeadSummary(rec)
	}
	if len(recs) == int(limit) {
		page.NextAfter = recs[len(recs)-1].ID
	}
	writeJSON(w, page)
}

// lane finds the lane named name in any store (lane names are unique
// across a config's stores).
func (a api) lane(name string) (laneRef, bool) {
	for _, l := range eachLane(a.stores) {
		if l.Name == name {
			return l, true
		}
	}
	return laneRef{}, false
}

// queryInt reads an integer query parameter in [lo, hi], def when absent.
func queryInt(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s: %q is not an integer from %d to %d", name, s, lo, hi)
	}
	return n, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
