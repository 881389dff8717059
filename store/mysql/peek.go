package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlcommon"
)

// Ready reports whether s has a pending row that is due: one non-locking
// read off the claim index, in autocommit, which relays run between claims
// (store.Peeker) because an empty claim costs a locking transaction.
func (s *Store) Ready(ctx context.Context, sc store.Scope) (bool, error) {
	table, err := quote(sc.Table)
	if err != nil {
		return false, err
	}
	where, args := sqlcommon.ScopeWhere(sc, "r")
	q := "SELECT 1 FROM " + table + " r FORCE INDEX (" + claimIndex(store.StatusPending, store.ClaimParams{Scope: sc}) +
		") WHERE r.status = 'pending' AND r.available_at <= UTC_TIMESTAMP(6)" + where + " LIMIT 1"
	var one int
	err = s.db.QueryRowContext(ctx, q, args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mysql store: peek at %s: %w", sc.Table, err)
	}
	return true, nil
}
