package binlog

import (
	"context"
	"database/sql"
	"errors"

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
	q, err := quote(sc.Table)
	if err != nil {
		return probe, nil, err
	}
	return loglane.Strays(ctx, "mysql store", lane, loglane.StraySteps{
		Reached:  func(ctx context.Context, end uint64) (bool, error) { return s.positionReached(ctx, lane, end) },
		HandOver: func(ctx context.Context, ids []int64) ([]int64, error) { return s.handOverStrays(ctx, q, lane, ids) },
		Sample: func(ctx context.Context, limit int) (store.StrayProbe, error) {
			return s.sampleStrays(ctx, q, sc, limit)
		},
	}, probe, limit)
}

// positionReached reports whether lane's recorded position is at or past
// end (false before the lane has a position).
func (s *Store) positionReached(ctx context.Context, lane string, end uint64) (bool, error) {
	var reached bool
	err := s.DB().QueryRowContext(ctx, `SELECT position >= ? FROM herald_log_lanes WHERE lane = ?`, int64(end), lane).Scan(&reached)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return reached, err
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

// sampleStrays reads up to limit pending rows of sc without an owner,
// oldest first, then the binary log's end.
func (s *Store) sampleStrays(ctx context.Context, q string, sc store.Scope, limit int) (store.StrayProbe, error) {
	scope, args := sqlbuild.ScopeWhere(sc, "")
	rows, err := s.DB().QueryContext(ctx, "SELECT id FROM "+q+" WHERE status = 'pending' AND lease_owner = ''"+
		scope+" ORDER BY id LIMIT ?", append(args, limit)...)
	if err != nil {
		return store.StrayProbe{}, err
	}
	ids, err := sqlscan.ReadIDs(rows)
	rows.Close()
	if err != nil || len(ids) == 0 {
		return store.StrayProbe{}, err
	}
	end, err := s.currentPosition(ctx)
	if err != nil {
		return store.StrayProbe{}, err
	}
	return store.StrayProbe{IDs: ids, LogEnd: end.encode()}, nil
}
