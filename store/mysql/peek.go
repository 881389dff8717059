package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// Ready reports whether s has a pending row that is due: one non-locking
// read off the claim index, in autocommit, which relays run between claims
// (store.Peeker) because an empty claim costs a locking transaction.
func (s *Store) Ready(ctx context.Context, sc store.Scope) (bool, error) {
	if t := s.mappedTable(sc.Table); t != nil {
		return t.Ready(ctx, sc)
	}
	table, err := quote(sc.Table)
	if err != nil {
		return false, err
	}
	where, args := sqlbuild.ScopeWhere(sc, "r")
	ix := claimIndexFor(store.StatusPending, store.ClaimParams{Scope: sc})
	q := "SELECT 1 FROM " + table + " r FORCE INDEX (" + ix.name + ") WHERE " + ix.due + where + " LIMIT 1"
	args = append(ix.args, args...)
	st, err := s.peekStmt(ctx, q)
	if err != nil {
		err = explainMissingIndex(err, sc.Table, store.TableUse{Tenants: sc.Tenant != ""})
		return false, fmt.Errorf("mysql store: peek at %s: %w", sc.Table, err)
	}
	var one int
	err = st.QueryRowContext(ctx, args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mysql store: peek at %s: %w", sc.Table, err)
	}
	return true, nil
}

// peekStmt returns q prepared, from the store's cache. Peeks run hundreds
// of times a second while a lane is active, and a prepared statement costs
// the server about a third less CPU than the same query as text (measured
// on MariaDB 10.11: 89 against 137 µs per peek at full rate).
func (s *Store) peekStmt(ctx context.Context, q string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.peeks[q]; ok {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if s.peeks == nil {
		s.peeks = map[string]*sql.Stmt{}
	}
	s.peeks[q] = st
	return st, nil
}

// Preview reads up to limit rows a claim would take, in its order
// (store.Previewer), without locks or writes. An ordered lane's claim
// also skips keys that earlier rows block, which a preview does not.
func (s *Store) Preview(ctx context.Context, sc store.Scope, limit int) ([]store.Record, error) {
	if t := s.mappedTable(sc.Table); t != nil {
		return t.Preview(ctx, sc, limit)
	}
	return s.reader().Preview(ctx, sc, limit)
}
