package mapsql

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// Replay by query and retry now on a mapped table (store.QueryReplayer's
// writes). A replayed row goes back to the first pending value, due at
// once, with the attempts column (where mapped) at 0, as `herald dead
// replay` does; each replay is recorded in herald_replays under its event
// id (row id 0: the table has none). Where the table maps a receipt
// column, the replay's number goes there, as on Herald's own tables, so
// that the relay gives the broker a dedupe id of the replay's own
// (broker.DedupeID); without one a replayed event keeps its event id as
// its dedupe id.

// Recorder writes herald_replays rows in a replay's transaction: Now is
// the database clock as replayed_at holds it; Bind spells placeholders.
type Recorder struct {
	Now  string
	Bind func(string) string
}

// ReplayNext moves up to b.Limit rows of b.Query after the row numbered
// b.AfterID back to pending, in event id order, in tx, records each in
// herald_replays, and returns their numbers.
func (t *Table) ReplayNext(ctx context.Context, tx Runner, rec Recorder, b store.ReplayBatch) ([]int64, error) {
	if err := b.Query.ValidateReplay(); err != nil {
		return nil, err
	}
	if b.Limit <= 0 {
		return nil, fmt.Errorf("replay: limit %d is not positive", b.Limit)
	}
	sel, err := t.pickReplay(ctx, tx, b)
	if err != nil || len(sel) == 0 {
		return nil, err
	}
	byReplay := map[int][]string{}
	entries := make([]any, 0, 5*len(sel))
	for _, p := range sel {
		byReplay[p.replay] = append(byReplay[p.replay], p.eventID)
		entries = append(entries, t.name, p.eventID, string(p.from), b.By, b.Reason)
	}
	for replay, ids := range byReplay {
		if err := t.replayRows(ctx, tx, replay, ids); err != nil {
			return nil, err
		}
	}
	values := strings.TrimSuffix(strings.Repeat("(?, ?, 0, ?, "+rec.Now+", ?, ?), ", len(sel)), ", ")
	q := "INSERT INTO herald_replays (table_name, event_id, row_id, from_status, replayed_at, replayed_by, reason) VALUES " + values
	if rec.Bind != nil {
		q = rec.Bind(q)
	}
	if _, err := tx.ExecContext(ctx, q, entries...); err != nil {
		return nil, err
	}
	refs := make([]int64, len(sel))
	for i, p := range sel {
		refs[i] = t.refs.ref(p.eventID)
	}
	return refs, nil
}

// replayPick is a row a replay batch takes: its event id, state, and the
// number of the replay it is about to get (0 without a receipt column).
type replayPick struct {
	eventID string
	from    store.Status
	replay  int
}

// pickReplay selects and locks the rows of b.
func (t *Table) pickReplay(ctx context.Context, tx Runner, b store.ReplayBatch) ([]replayPick, error) {
	where, args, err := t.where(b.Query)
	if err != nil {
		return nil, err
	}
	if where, args, err = t.after(where, args, b.AfterID, false); err != nil {
		return nil, err
	}
	q := "SELECT " + t.c.ID + ", " + t.c.Status + ", " + or(t.c.Receipt, "''") + " FROM " + t.quoted + " WHERE 1 = 1" + where +
		" ORDER BY " + t.c.ID + " LIMIT ?" + t.ts.d.ForUpdate
	rows, err := tx.QueryContext(ctx, t.rebind(q), append(args, b.Limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var sel []replayPick
	for rows.Next() {
		var id, status, receipt any
		if err := rows.Scan(&id, &status, &receipt); err != nil {
			return nil, err
		}
		p := replayPick{eventID: text(id), from: t.state(text(status))}
		if t.c.Receipt != "" {
			p.replay = receiptOf(text(receipt)).Replay + 1
		}
		sel = append(sel, p)
	}
	return sel, rows.Err()
}

// receiptOf reads a receipt column's JSON; anything unreadable (the old
// worker's own text, NULL) is a receipt of an event never replayed.
func receiptOf(s string) store.Receipt {
	var r store.Receipt
	_ = json.Unmarshal([]byte(s), &r)
	return r
}

// replayRows puts the rows of ids back to the first pending value with
// replay's number in the receipt column (where mapped); each must still
// be delivered or dead.
func (t *Table) replayRows(ctx context.Context, tx Runner, replay int, ids []string) error {
	c := t.c
	set, args := c.Status+" = ?, "+c.NextAttempt+" = "+t.now(), []any{t.m.Statuses.Pending[0]}
	if c.Attempts != "" {
		set += ", " + c.Attempts + " = 0"
	}
	if c.Receipt != "" {
		set += ", " + c.Receipt + " = ?"
		args = append(args, store.Receipt{Replay: replay}.JSON())
	}
	finished, finishedArgs := t.statusIn([]string{t.m.Statuses.Delivered, t.m.Statuses.Dead})
	q := "UPDATE " + t.quoted + " SET " + set + " WHERE " + c.ID + " IN (" + sqlbuild.Marks(len(ids)) + ") AND " + finished
	args = append(append(args, sqlbuild.StringArgs(ids)...), finishedArgs...)
	res, err := tx.ExecContext(ctx, t.rebind(q), args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(ids)) {
		return fmt.Errorf("replayed %d of the %d rows selected (%v): rolled back", n, len(ids), err)
	}
	return nil
}

// RetryNow makes the scope's pending rows of eventIDs due at once and
// returns how many it changed; other rows are left alone.
func (t *Table) RetryNow(ctx context.Context, s store.Scope, eventIDs []string) (int64, error) {
	if len(eventIDs) == 0 {
		return 0, nil
	}
	if s.Tenant != "" && t.c.Tenant == "" {
		return 0, fmt.Errorf("%s: retry now %s: tenant: the mapped table has no columns.tenant", t.ts.d.Name, t.name)
	}
	pending, args := t.statusIn(t.m.Statuses.Pending)
	scope, scopeArgs := sqlbuild.ScopeWhereColumns(s, t.c.Tenant, t.c.Type)
	q := "UPDATE " + t.quoted + " SET " + t.c.NextAttempt + " = " + t.now() + " WHERE " + pending + scope +
		" AND " + t.c.ID + " IN (" + sqlbuild.Marks(len(eventIDs)) + ")"
	args = append(append(args, scopeArgs...), sqlbuild.StringArgs(eventIDs)...)
	var n int64
	err := t.ts.autocommit(ctx, func(r Runner) error {
		res, err := r.ExecContext(ctx, t.rebind(q), args...)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("%s: retry now %s: %w", t.ts.d.Name, t.name, err)
	}
	return n, nil
}
