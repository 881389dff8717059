package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pglogrepl"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/loglane"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

// Strays hands over the rows of sc that the log passed without settling
// (store.LogReader). A row visible when it was sampled was committed before
// the WAL insert position read after the sample, so once the lane's
// recorded position reaches that, the stream has read, published and
// recorded its transaction: the row must be marked, journaled or handed
// over by then.
func (s *Store) Strays(ctx context.Context, lane string, sc store.Scope, probe store.StrayProbe, limit int) (store.StrayProbe, []int64, error) {
	q, err := quote(sc.Table)
	if err != nil {
		return probe, nil, err
	}
	return loglane.Strays(ctx, "postgres store", lane, loglane.StraySteps{
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
	err := s.db.QueryRowContext(ctx, `SELECT position >= $2 FROM herald_log_lanes WHERE lane = $1`, lane, int64(end)).Scan(&reached)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return reached, err
}

// handOverStrays gives the rows of ids still pending, without an owner and
// in no journaled batch to the lane's polling workers. A concurrent
// ApplyMarks either committed (the row is no longer pending) or still
// holds the journal row (this statement's snapshot sees it).
func (s *Store) handOverStrays(ctx context.Context, q, lane string, ids []int64) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, `UPDATE `+q+` t SET lease_owner = $3, last_error = $4
WHERE t.id = ANY($1) AND (t.status || '') = 'pending' AND t.lease_owner = ''
  AND NOT EXISTS (SELECT 1 FROM herald_log_marks m WHERE m.lane = $2 AND t.id = ANY(m.ids))
RETURNING t.id`, ids, lane, LogOwner(lane), loglane.StrayError)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlscan.ReadIDs(rows)
}

// sampleStrays reads up to limit pending rows of sc without an owner,
// oldest first, then the WAL insert position.
func (s *Store) sampleStrays(ctx context.Context, q string, sc store.Scope, limit int) (store.StrayProbe, error) {
	scope, args := sqlbuild.ScopeWhere(sc, "")
	rows, err := s.db.QueryContext(ctx, sqlbuild.Rebind("SELECT id FROM "+q+" WHERE status = 'pending' AND lease_owner = ''"+
		scope+" ORDER BY id LIMIT ?"), append(args, limit)...)
	if err != nil {
		return store.StrayProbe{}, err
	}
	ids, err := sqlscan.ReadIDs(rows)
	rows.Close()
	if err != nil || len(ids) == 0 {
		return store.StrayProbe{}, err
	}
	var lsn string
	if err := s.db.QueryRowContext(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		return store.StrayProbe{}, err
	}
	end, err := pglogrepl.ParseLSN(lsn)
	if err != nil {
		return store.StrayProbe{}, err
	}
	return store.StrayProbe{IDs: ids, LogEnd: uint64(end)}, nil
}
