package admin

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/heraldhq/herald/store"
)

// unselectedScan bounds the rows GET /api/stores/{store}/tables/{table}/unselected
// reads to find those no lane selects, so a large backlog costs no more.
const unselectedScan = 10 * maxDeadPage

// UnselectedPage is GET /api/stores/{store}/tables/{table}/unselected: the
// table's pending and in-flight events that no lane selects, oldest first
// (the first 100 found), and whether the scan stopped at its bound.
type UnselectedPage struct {
	Events []EventSummary `json:"events"`
	// Partial says more rows were waiting than the scan reads
	// (unselectedScan): there may be more than these.
	Partial bool `json:"partial,omitempty"`
}

// selects reports whether scope s would claim r: the same tenant and type
// filters the stores apply in SQL, here on a row already read.
func selects(s store.Scope, r store.Record) bool {
	if s.Tenant != "" && s.Tenant != r.Event.Tenant {
		return false
	}
	if len(s.IncludeTypes) > 0 && !slices.Contains(s.IncludeTypes, r.Event.Type) {
		return false
	}
	return !slices.Contains(s.ExcludeTypes, r.Event.Type)
}

// unselectedRows answers the drill-down from the overview's "Rows no lane
// selects": the waiting events of one table that every lane's filters
// leave out, read a page at a time and filtered here.
func (a api) unselectedRows(w http.ResponseWriter, r *http.Request) {
	name, table := r.PathValue("store"), r.PathValue("table")
	i := slices.IndexFunc(a.stores, func(s StoreLanes) bool { return s.Name == name })
	if i < 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no store %q", name))
		return
	}
	var scopes []store.Scope
	for _, l := range a.stores[i].Lanes {
		if sc := l.Scope(); sc.Table == table {
			scopes = append(scopes, sc)
		}
	}
	if len(scopes) == 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no lane of store %s relays table %q", name, table))
		return
	}
	st, err := a.stores[i].open()
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	q := store.EventQuery{Scope: store.Scope{Table: table}, Statuses: []store.Status{store.StatusPending, store.StatusInFlight}}
	page := UnselectedPage{Events: []EventSummary{}}
	var after int64
	for read := 0; len(page.Events) < projectionShown; {
		if read >= unselectedScan {
			page.Partial = true
			break
		}
		recs, err := st.Replays().FindEvents(r.Context(), q, after, maxDeadPage)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		for _, rec := range recs {
			if !slices.ContainsFunc(scopes, func(s store.Scope) bool { return selects(s, rec) }) && len(page.Events) < projectionShown {
				page.Events = append(page.Events, NewEventSummary(rec))
			}
		}
		if len(recs) < maxDeadPage {
			break
		}
		read, after = read+len(recs), recs[len(recs)-1].ID
	}
	writeJSON(w, page)
}
