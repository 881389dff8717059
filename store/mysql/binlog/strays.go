package binlog

import (
	"context"
	"database/sql"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/loglane"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

// Strays hands over the rows of sc that the binary log passed without
// settling (store.LogReader). InnoDB makes a transaction's rows visible
// after its events are in the binary log, so a row visible when it was
// sampled lies before the log's end read after the sample; once the lane's
// recorded position reaches that end, the stream has read, published and
// recorded it.
func (s *Store) Strays(ctx context.Context, lane string, sc store.Scope, probe store.StrayProbe, limit int) (store.StrayProbe, []int64, error) {
	if s.Mapped(sc.Table) != nil {
		return store.StrayProbe{}, nil, nil // none on a mapped table (mapped.go)
	}
	return s.logs.Strays(ctx, lane, sc, probe, limit, s.handOverStrays, func(ctx context.Context) (uint64, error) {
		end, err := s.currentPosition(ctx)
		return end.encode(), err
	})
}

// handOverStrays gives the rows of ids still pending, without an owner and
// in no journaled batch to the lane's polling workers. The locking read
// waits for a concurrent ApplyMarks, and then finds its rows settled.
func (s *Store) handOverStrays(ctx context.Context, q, lane string, ids []int64) ([]int64, error) {
	var handed []int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT t.id FROM "+q+" t WHERE t.id IN ("+sqlbuild.Marks(len(ids))+
			`) AND t.status = 'pending' AND t.lease_owner = ''
  AND NOT EXISTS (SELECT 1 FROM herald_log_marks m, JSON_TABLE(m.marks, '$[*]' COLUMNS (id BIGINT PATH '$[0]')) j
    WHERE m.lane = ? AND j.id = t.id)
FOR UPDATE`, append(sqlbuild.Int64Args(ids), lane)...)
		if err != nil {
			return err
		}
		handed, err = sqlscan.ReadIDs(rows)
		rows.Close()
		if err != nil || len(handed) == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE "+q+" SET lease_owner = ?, last_error = ? WHERE id IN ("+sqlbuild.Marks(len(handed))+")",
			append([]any{LogOwner(lane), loglane.StrayError}, sqlbuild.Int64Args(handed)...)...)
		return err
	})
	return handed, err
}
