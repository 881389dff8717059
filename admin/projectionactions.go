package admin

import (
	"fmt"
	"net/http"
)

// ProjectionReplayRequest is the body of POST
// /api/projections/{projection}/replay: the dead events to apply again,
// or all of them.
type ProjectionReplayRequest struct {
	EventIDs []string `json:"event_ids"`
	All      bool     `json:"all"`
}

// replayProjection moves dead events back to failed, due now, as `herald
// projection replay NAME --dead` does; running projectors apply them.
func (a api) replayProjection(w http.ResponseWriter, r *http.Request, p projRef, b ProjectionReplayRequest) {
	if b.All == (len(b.EventIDs) > 0) {
		writeError(w, http.StatusBadRequest, "name the dead event_ids to replay, or set all (not both)")
		return
	}
	n, err := p.st.ReplayProjection(r.Context(), p.table(), p.Name, b.EventIDs)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, ChangeResponse{Changed: n})
}

// RebuildRequest is the body of POST /api/projections/{projection}/rebuild.
// Confirm must repeat the projection's name: a rebuild cannot be undone.
type RebuildRequest struct {
	Confirm string `json:"confirm"`
	DryRun  bool   `json:"dry_run"`
}

// RebuildResponse says what a rebuild deleted, or would delete.
type RebuildResponse struct {
	Rows   int64 `json:"rows"`
	DryRun bool  `json:"dry_run"`
	// Warning says what the rebuild leaves to the operator.
	Warning string `json:"warning"`
}

// rebuildWarning is why a dashboard rebuild needs the operator's care:
// it cannot run the statements that clear the read model.
const rebuildWarning = "the read model keeps its rows: every event is applied again on top of them " +
	"(to clear it in the same transaction, use herald projection rebuild NAME --reset-sql 'DELETE FROM ...')"

// rebuildProjection deletes the projection's ledger rows, as `herald
// projection rebuild` without --reset-sql does, so its projectors apply
// every event again. It refuses unless the body confirms the name.
func (a api) rebuildProjection(w http.ResponseWriter, r *http.Request, p projRef, b RebuildRequest) {
	if b.DryRun {
		status, err := ReadProjection(r.Context(), p.st, p.storeName, p.ProjectionRef)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		writeJSON(w, RebuildResponse{Rows: status.Processing + status.Failed + status.Done + status.Dead,
			DryRun: true, Warning: rebuildWarning})
		return
	}
	if b.Confirm != p.Name {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("a rebuild deletes the ledger of %s and cannot be undone: "+
			"set confirm to the projection's name to go ahead", p.Name))
		return
	}
	n, err := p.st.ResetProjection(r.Context(), p.table(), p.Name, nil)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, RebuildResponse{Rows: n, Warning: rebuildWarning})
}
