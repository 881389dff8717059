package mapsql

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/store"
)

// ErrNoReplayByQuery is returned by search and replay by query on a mapped
// table: the replay history names rows by a row id, which a mapped table
// does not have. `herald dead replay` works there (Table.Replay).
var ErrNoReplayByQuery = errors.New("search and replay by query are not supported on a mapped table yet: " +
	"use herald dead replay (docs/adopt.md)")

// Replays returns r, which serves tables of Herald's own, refusing mapped
// tables with ErrNoReplayByQuery instead of the database's "no such
// column".
func (ts *Tables) Replays(r store.QueryReplayer) store.QueryReplayer { return refusingReplayer{r, ts} }

type refusingReplayer struct {
	store.QueryReplayer
	ts *Tables
}

func (r refusingReplayer) refuse(table string) error {
	if r.ts.Get(table) == nil {
		return nil
	}
	return fmt.Errorf("%s: %s: %w", r.ts.d.Name, table, ErrNoReplayByQuery)
}

func (r refusingReplayer) CountEvents(ctx context.Context, q store.EventQuery) (int64, error) {
	if err := r.refuse(q.Table); err != nil {
		return 0, err
	}
	return r.QueryReplayer.CountEvents(ctx, q)
}

func (r refusingReplayer) FindEvents(ctx context.Context, q store.EventQuery, afterID int64, limit int) ([]store.Record, error) {
	if err := r.refuse(q.Table); err != nil {
		return nil, err
	}
	return r.QueryReplayer.FindEvents(ctx, q, afterID, limit)
}

func (r refusingReplayer) ReplayNext(ctx context.Context, b store.ReplayBatch) ([]int64, error) {
	if err := r.refuse(b.Query.Table); err != nil {
		return nil, err
	}
	return r.QueryReplayer.ReplayNext(ctx, b)
}

func (r refusingReplayer) ReplayHistory(ctx context.Context, table, eventID string) ([]store.Replay, error) {
	if err := r.refuse(table); err != nil {
		return nil, err
	}
	return r.QueryReplayer.ReplayHistory(ctx, table, eventID)
}

func (r refusingReplayer) RetryNow(ctx context.Context, s store.Scope, eventIDs []string) (int64, error) {
	if err := r.refuse(s.Table); err != nil {
		return 0, err
	}
	return r.QueryReplayer.RetryNow(ctx, s, eventIDs)
}
