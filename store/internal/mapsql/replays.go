package mapsql

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/replaysql"
)

// Replays returns the store's search and replay by query: r serves
// tables of Herald's own, and a mapped table's queries go through its
// mapping (query.go, replaynext.go). Both record replays in r's
// herald_replays, so an event's history reads alike on either.
func (ts *Tables) Replays(r replaysql.Replayer) store.QueryReplayer { return routedReplayer{r, ts} }

type routedReplayer struct {
	replaysql.Replayer
	ts *Tables
}

func (r routedReplayer) CountEvents(ctx context.Context, q store.EventQuery) (int64, error) {
	if t := r.ts.Get(q.Table); t != nil {
		return t.CountEvents(ctx, q)
	}
	return r.Replayer.CountEvents(ctx, q)
}

func (r routedReplayer) FindEvents(ctx context.Context, q store.EventQuery, afterID int64, limit int) ([]store.Record, error) {
	if t := r.ts.Get(q.Table); t != nil {
		return t.FindEvents(ctx, q, afterID, limit)
	}
	return r.Replayer.FindEvents(ctx, q, afterID, limit)
}

func (r routedReplayer) ReplayNext(ctx context.Context, b store.ReplayBatch) ([]int64, error) {
	t := r.ts.Get(b.Query.Table)
	if t == nil {
		return r.Replayer.ReplayNext(ctx, b)
	}
	var refs []int64
	err := r.InTx(ctx, func(tx *sql.Tx) (err error) {
		refs, err = t.ReplayNext(ctx, tx, Recorder{Now: r.Now, Bind: r.Bind}, b)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: replay %s: %w", r.ts.d.Name, t.name, err)
	}
	return refs, nil
}

func (r routedReplayer) RetryNow(ctx context.Context, s store.Scope, eventIDs []string) (int64, error) {
	if t := r.ts.Get(s.Table); t != nil {
		return t.RetryNow(ctx, s, eventIDs)
	}
	return r.Replayer.RetryNow(ctx, s, eventIDs)
}
