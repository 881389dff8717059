package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

var _ store.Peeker = (*Store)(nil)

// Ready reports whether s has a pending row that is due: one read off the
// claim index (pgx keeps the statement prepared per connection), which
// relays run between claims (store.Peeker). It is how a relay sees rows
// that producers in other processes commit without a NOTIFY: a NOTIFY at
// commit serializes the committing transactions of the whole server
// (docs/sql.md), so the plain INSERT does not send one.
func (s *Store) Ready(ctx context.Context, sc store.Scope) (bool, error) {
	if t := s.mapped.Get(sc.Table); t != nil {
		return t.Ready(ctx, sc)
	}
	table, err := quote(sc.Table)
	if err != nil {
		return false, err
	}
	where, args := sqlbuild.ScopeWhere(sc, "r")
	q := sqlbuild.Rebind("SELECT 1 FROM " + table + " r WHERE r.status = 'pending' AND r.available_at <= now()" + where + " LIMIT 1")
	var one int
	err = s.db.QueryRowContext(ctx, q, args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("postgres store: peek at %s: %w", sc.Table, err)
	}
	return true, nil
}

// Preview reads up to limit rows a claim would take, in its order
// (store.Previewer), without locks or writes. An ordered lane's claim
// also skips keys that earlier rows block, which a preview does not.
func (s *Store) Preview(ctx context.Context, sc store.Scope, limit int) ([]store.Record, error) {
	if t := s.mapped.Get(sc.Table); t != nil {
		return t.Preview(ctx, sc, limit)
	}
	return s.reader().Preview(ctx, sc, limit)
}
