package postgres

import (
	"context"

	"github.com/jackc/pglogrepl"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/loglane"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

// Strays hands over the rows of sc that the log passed without settling
// (store.LogReader). A row visible when it was sampled was committed before
// the WAL insert position read after the sample, so once the lane's
// recorded position reaches that, the stream has read, published and
// recorded its transaction: the row must be marked, journaled or handed
// over by then.
func (s *Store) Strays(ctx context.Context, lane string, sc store.Scope, probe store.StrayProbe, limit int) (store.StrayProbe, []int64, error) {
	if s.mapped.Get(sc.Table) != nil {
		return store.StrayProbe{}, nil, nil // none on a mapped table (logical_mapped.go)
	}
	return s.logs.Strays(ctx, lane, sc, probe, limit, s.handOverStrays, s.walInsertEnd)
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

// walInsertEnd is the WAL's insert position now: a row visible before it
// was read was committed before it.
func (s *Store) walInsertEnd(ctx context.Context) (uint64, error) {
	var lsn string
	if err := s.db.QueryRowContext(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		return 0, err
	}
	end, err := pglogrepl.ParseLSN(lsn)
	return uint64(end), err
}
