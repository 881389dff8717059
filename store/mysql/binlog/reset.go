package binlog

import (
	"context"
	"database/sql"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/loglane"
)

// ResetLog applies the lane's journaled marks and deletes its position
// (file, offset and GTID position) and journal, in one transaction
// (store.LogReader.ResetLog). The server keeps nothing for a lane: its
// binary logs expire on their own schedule.
func (s *Store) ResetLog(ctx context.Context, lane string, deleteRows bool) (store.LogReset, error) {
	return s.logs.Reset(ctx, lane, func(ctx context.Context, tx *sql.Tx, q, table, lane string) (store.MarksApplied, error) {
		if s.Mapped(table) != nil {
			return store.MarksApplied{}, nil // marked as recorded (mapped.go)
		}
		return applyMarks(ctx, tx, &s.images, q, table, lane, loglane.ResetBatches, deleteRows)
	}, nil)
}
