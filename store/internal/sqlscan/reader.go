package sqlscan

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// Reader runs the operator reads (List, Get) that the MySQL and PostgreSQL
// stores write alike but for their clock and placeholders.
type Reader struct {
	Name  string // "mysql store", the prefix of errors
	DB    *sql.DB
	Now   string              // the database clock in SQL: UTC_TIMESTAMP(6), now()
	Bind  func(string) string // ? placeholders to the driver's; nil keeps them
	Quote func(table string) (string, error)
}

func (r Reader) query(ctx context.Context, q string, args ...any) ([]store.Record, error) {
	if r.Bind != nil {
		q = r.Bind(q)
	}
	rows, err := r.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return ScanRecords(rows)
}

// List returns up to p.Limit (or defaultLimit) rows of p.Status with ids
// above p.AfterID, in id order.
func (r Reader) List(ctx context.Context, p store.ListParams, defaultLimit int) ([]store.Record, error) {
	table, err := r.Quote(p.Table)
	if err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	scope, scopeArgs := sqlbuild.ScopeWhere(p.Scope, "")
	args := append(append([]any{string(p.Status), p.AfterID}, scopeArgs...), limit)
	recs, err := r.query(ctx, "SELECT "+RecordColumns("")+", "+r.Now+" FROM "+table+
		" WHERE status = ? AND id > ?"+scope+" ORDER BY id LIMIT ?", args...)
	if err != nil {
		return nil, fmt.Errorf("%s: list %s: %w", r.Name, p.Table, err)
	}
	return recs, nil
}

// Get returns the row of eventID with its attempt errors, or
// store.ErrNotFound.
func (r Reader) Get(ctx context.Context, table, eventID string) (store.Record, error) {
	qt, err := r.Quote(table)
	if err != nil {
		return store.Record{}, err
	}
	q := "SELECT " + RecordColumns("") + ", " + r.Now + ", attempt_errors FROM " + qt + " WHERE event_id = ?"
	if r.Bind != nil {
		q = r.Bind(q)
	}
	var recs []store.Record
	rows, err := r.DB.QueryContext(ctx, q, eventID)
	if err == nil {
		recs, err = ScanWithErrors(rows)
	}
	switch {
	case err != nil:
		return store.Record{}, fmt.Errorf("%s: get %s %q: %w", r.Name, table, eventID, err)
	case len(recs) == 0:
		return store.Record{}, fmt.Errorf("%s: get %s %q: %w", r.Name, table, eventID, store.ErrNotFound)
	}
	return recs[0], nil
}

// Preview returns up to limit rows a claim would take, in its order
// (store.Previewer), without locks: claimable rows by (available_at, id).
func (r Reader) Preview(ctx context.Context, sc store.Scope, limit int) ([]store.Record, error) {
	table, err := r.Quote(sc.Table)
	if err != nil {
		return nil, err
	}
	scope, scopeArgs := sqlbuild.ScopeWhere(sc, "")
	recs, err := r.query(ctx, "SELECT "+RecordColumns("")+", "+r.Now+" FROM "+table+
		" WHERE status IN ('pending', 'in_flight') AND available_at <= "+r.Now+scope+
		" ORDER BY available_at, id LIMIT ?", append(scopeArgs, limit)...)
	if err != nil {
		return nil, fmt.Errorf("%s: preview %s: %w", r.Name, sc.Table, err)
	}
	return store.Claimable(recs), nil
}
