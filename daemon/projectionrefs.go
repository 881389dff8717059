package daemon

import (
	"github.com/heraldhq/herald/admin"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/store"
)

// ProjectionRefs lists f's configured projections for `herald status` and the admin metrics.
func ProjectionRefs(f *config.File) []admin.ProjectionRef {
	out := make([]admin.ProjectionRef, 0, len(f.Projections))
	for _, p := range f.Projections {
		ref := admin.ProjectionRef{Name: p.Name, Table: p.Table}
		if p.Source.Outbox != "" {
			ref.Outbox = store.Scope{Table: p.Source.Outbox, IncludeTypes: p.IncludeTypes, ExcludeTypes: p.ExcludeTypes}
		}
		out = append(out, ref)
	}
	return out
}
