package postgres

import (
	"context"

	"github.com/heraldhq/herald/store"
)

// Cleanup implements store.Store.Cleanup: on a mapped table through its
// mapping (its own status values and time columns), else Herald's.
func (s *Store) Cleanup(ctx context.Context, p store.CleanupParams) (int64, error) {
	if t := s.mapped.Get(p.Table); t != nil {
		return t.Cleanup(ctx, p)
	}
	return s.maintenance.Cleanup(ctx, p)
}
