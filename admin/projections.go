package admin

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/store"
)

// ProjectionRef is a projection the admin server and `herald status`
// report on: its name, its ledger table and, for an outbox source, the
// outbox it reads (whose unfinished events are its lag).
type ProjectionRef struct {
	Name string
	// Table is the ledger table (store.DefaultProjectionTable when empty).
	Table string
	// Outbox is an outbox source's table and type filters; its Table is
	// empty for a broker source, whose backlog only the broker knows.
	Outbox store.Scope
}

// ProjectionBehindCap bounds the outbox events counted behind a projection:
// the count reads them, so a projection far behind costs no more than this.
const ProjectionBehindCap = 1000

// ProjectionStatus is one projection in `herald status --json` and
// GET /api/lanes (as "projections"): its ledger rows by state and, for an
// outbox source, how far behind it is.
type ProjectionStatus struct {
	Name       string `json:"name"`
	Store      string `json:"store"`
	Table      string `json:"table"`
	Processing int64  `json:"processing"`
	Failed     int64  `json:"failed"`
	Done       int64  `json:"done"`
	Dead       int64  `json:"dead"`
	// LastAppliedAgeSeconds is how long ago an event was last applied (0:
	// never); OldestFailedAgeSeconds the age of the oldest failed row.
	LastAppliedAgeSeconds  float64 `json:"last_applied_age_seconds"`
	OldestFailedAgeSeconds float64 `json:"oldest_failed_age_seconds"`
	// Behind counts the outbox events the projection has not finished (done
	// or dead), up to ProjectionBehindCap, and LagSeconds is the age of the
	// oldest of them (0 when none): outbox sources only, -1 otherwise.
	Behind     int64   `json:"events_behind"`
	LagSeconds float64 `json:"lag_seconds"`
	// StoreError says why the projection could not be read.
	StoreError string `json:"store_error,omitempty"`
}

// ReadProjection reads ref's ledger counts and, for an outbox source, its
// lag from ps.
func ReadProjection(ctx context.Context, ps store.ProjectionStore, storeName string, ref ProjectionRef) (ProjectionStatus, error) {
	table := ref.Table
	if table == "" {
		table = store.DefaultProjectionTable
	}
	out := ProjectionStatus{Name: ref.Name, Store: storeName, Table: table, Behind: -1, LagSeconds: -1}
	stats, err := ps.ProjectionStats(ctx, table, ref.Name)
	if err != nil {
		return out, fmt.Errorf("projection %s: %w", ref.Name, err)
	}
	for _, st := range stats {
		out.Processing, out.Failed, out.Done, out.Dead = st.Processing, st.Failed, st.Done, st.Dead
		out.LastAppliedAgeSeconds, out.OldestFailedAgeSeconds = st.LastDoneAge.Seconds(), st.OldestFailedAge.Seconds()
	}
	if ref.Outbox.Table == "" {
		return out, nil
	}
	recs, err := ps.ScanOutbox(ctx, store.OutboxScanParams{Scope: ref.Outbox, ProjectionTable: table,
		Projection: ref.Name, Limit: ProjectionBehindCap})
	if err != nil {
		return out, fmt.Errorf("projection %s: outbox %s: %w", ref.Name, ref.Outbox.Table, err)
	}
	out.Behind, out.LagSeconds = int64(len(recs)), 0
	for _, r := range recs {
		out.LagSeconds = max(out.LagSeconds, r.Age.Seconds()) // on the database clock
	}
	return out, nil
}

// storeProjections reads every projection of s; one that cannot be read is
// listed with its error.
func storeProjections(ctx context.Context, st store.Store, s StoreLanes) []ProjectionStatus {
	out := make([]ProjectionStatus, 0, len(s.Projections))
	for _, ref := range s.Projections {
		p, err := ReadProjection(ctx, st, s.Name, ref)
		if err != nil {
			p.StoreError = err.Error()
		}
		out = append(out, p)
	}
	return out
}
