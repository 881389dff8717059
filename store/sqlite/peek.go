package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/heraldhq/herald/store"
)

// Ready reports whether s has a row a claim could take now (pending and
// due, or in flight with its lease run out): a read off the claim index,
// which under WAL never waits for a writer. Relays run it between claims
// (store.Peeker) because a claim must take the database's write lock.
func (s *Store) Ready(ctx context.Context, sc store.Scope) (bool, error) {
	if t := s.mapped.Get(sc.Table); t != nil {
		return t.Ready(ctx, sc)
	}
	qt, err := quote(sc.Table)
	if err != nil {
		return false, err
	}
	filter, args := scopeFilter("o", sc)
	q := `SELECT 1 FROM ` + qt + ` o INDEXED BY "` + sc.Table + `_claim"
WHERE o.status IN ('pending', 'in_flight') AND o.available_at <= ` + now + filter + ` LIMIT 1`
	st, err := s.stmts.get(ctx, s.db, q)
	if err != nil {
		return false, wrap("peek at", sc.Table, err)
	}
	var row *sql.Row
	if st != nil {
		row = st.QueryRowContext(ctx, args...)
	} else {
		row = s.db.QueryRowContext(ctx, q, args...)
	}
	var one int
	err = row.Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, wrap("peek at", sc.Table, err)
	}
	return true, nil
}

// Preview reads up to limit rows a claim would take, in its order
// (store.Previewer), without a write: claimable rows by (available_at,
// id). An ordered lane's claim also skips keys that earlier rows block,
// which a preview does not.
func (s *Store) Preview(ctx context.Context, sc store.Scope, limit int) ([]store.Record, error) {
	if t := s.mapped.Get(sc.Table); t != nil {
		return t.Preview(ctx, sc, limit)
	}
	qt, err := quote(sc.Table)
	if err != nil {
		return nil, err
	}
	filter, args := scopeFilter("o", sc)
	recs, err := queryRecords(ctx, s.db, `SELECT `+columns+` FROM `+qt+` o
WHERE o.status IN ('pending', 'in_flight') AND o.available_at <= `+now+filter+`
ORDER BY o.available_at, o.id LIMIT ?`, append(args, limit)...)
	return store.Claimable(recs), wrap("preview", sc.Table, err)
}
