package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// maxCachedStmts bounds the cache. The hot path has few distinct statements
// (claim shapes per lane, five marks per table); the bound only guards
// against a caller that varies scopes without end.
const maxCachedStmts = 256

// stmtCache keeps the hot path's statements prepared: parsing the claim
// took about half the CPU of a one-row claim + complete (pprof).
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// query runs query with args as a prepared statement from the cache.
func (c *stmtCache) query(ctx context.Context, db *sql.DB, query string, args ...any) (*sql.Rows, error) {
	st, err := c.get(ctx, db, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return db.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// get returns the cached statement for query, preparing it on first use,
// or nil when the cache is full.
func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	if len(c.m) >= maxCachedStmts {
		return nil, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		_ = st.Close()
	}
	c.m = nil
}
