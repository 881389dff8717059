package projsql

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

func encodeHeaders(h map[string]string) (string, error) {
	if len(h) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(h)
	return string(b), err
}

func decodeHeaders(s string) map[string]string {
	var h map[string]string
	if s == "" || json.Unmarshal([]byte(s), &h) != nil || len(h) == 0 {
		return nil
	}
	return h
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// ProjectionStats implements store.ProjectionStore.ProjectionStats.
func (pr Projections) ProjectionStats(ctx context.Context, table, projection string) ([]store.ProjectionStats, error) {
	d := pr.d
	t, err := d.table(table)
	if err != nil {
		return nil, err
	}
	where, args := "", []any(nil)
	if projection != "" {
		where, args = " WHERE projection = ?", []any{projection}
	}
	age := d.DiffMS(d.Now, "updated_at")
	rows, err := d.DB.QueryContext(ctx, d.q("SELECT projection, state, COUNT(*), MIN("+age+"), MAX("+age+") FROM "+t+
		where+" GROUP BY projection, state ORDER BY projection"), args...)
	if err != nil {
		return nil, d.wrap("projection stats", err)
	}
	defer rows.Close()
	var out []store.ProjectionStats
	for rows.Next() {
		var (
			name, state      string
			n                int64
			youngest, oldest sql.NullInt64
		)
		if err := rows.Scan(&name, &state, &n, &youngest, &oldest); err != nil {
			return nil, d.wrap("projection stats", err)
		}
		if len(out) == 0 || out[len(out)-1].Projection != name {
			out = append(out, store.ProjectionStats{Projection: name})
		}
		st := &out[len(out)-1]
		switch store.ProjectionState(state) {
		case store.ProjectionProcessing:
			st.Processing = n
		case store.ProjectionFailed:
			st.Failed, st.OldestFailedAge = n, ms(max(oldest.Int64, 0))
		case store.ProjectionDead:
			st.Dead = n
		case store.ProjectionDone:
			st.Done, st.LastDoneAge = n, ms(max(youngest.Int64, 0))
		}
	}
	return out, d.wrap("projection stats", rows.Err())
}

// stateLiteral returns state as an SQL literal, or an error naming an
// unknown state. Written into the query rather than bound, so that
// PostgreSQL can match it to a partial index (one on unfinished rows) in a
// cached statement's generic plan too.
func stateLiteral(state store.ProjectionState) (string, error) {
	switch state {
	case store.ProjectionProcessing, store.ProjectionFailed, store.ProjectionDone, store.ProjectionDead:
		return "'" + string(state) + "'", nil
	}
	return "", fmt.Errorf("unknown state %q (want processing, failed, done or dead)", state)
}

// cutoff is the SQL for "now plus the ? argument", for comparing an
// indexed column with: CutoffPlus where the dialect has one, else NowPlus.
func (d *Dialect) cutoff() string {
	if d.CutoffPlus != "" {
		return d.CutoffPlus
	}
	return d.NowPlus
}

// ListProjection implements store.ProjectionStore.ListProjection.
func (pr Projections) ListProjection(ctx context.Context, p store.ProjectionListParams) ([]store.ProjectionRow, error) {
	d := pr.d
	t, err := d.table(p.Table)
	if err != nil {
		return nil, err
	}
	if p.Limit <= 0 {
		p.Limit = 100
	}
	state, err := stateLiteral(p.State)
	if err != nil {
		return nil, d.wrap("list projection", err)
	}
	due := ""
	if p.Due {
		due = " AND (next_attempt_at IS NULL OR next_attempt_at <= " + d.Now + ")"
	}
	rows, err := d.DB.QueryContext(ctx, d.q("SELECT tenant, event_id, state, attempts, last_error, event_type, topic, "+
		"partition_key, headers, payload, "+d.DiffMS(d.Now, "updated_at")+" FROM "+t+
		" WHERE projection = ? AND state = "+state+due+" ORDER BY updated_at LIMIT ?"), p.Projection, p.Limit)
	if err != nil {
		return nil, d.wrap("list projection", err)
	}
	defer rows.Close()
	var out []store.ProjectionRow
	for rows.Next() {
		r := store.ProjectionRow{ProjectionKey: store.ProjectionKey{Table: p.Table, Projection: p.Projection}}
		var (
			state, headers string
			age            int64
		)
		if err := rows.Scan(&r.Tenant, &r.EventID, &state, &r.Attempts, &r.LastError, &r.Event.Type, &r.Event.Topic,
			&r.Event.PartitionKey, &headers, &r.Event.Payload, &age); err != nil {
			return nil, d.wrap("list projection", err)
		}
		r.State, r.Age = store.ProjectionState(state), ms(age)
		r.Event.ID, r.Event.Tenant, r.Event.Headers = r.EventID, r.Tenant, decodeHeaders(headers)
		out = append(out, r)
	}
	return out, d.wrap("list projection", rows.Err())
}

// ReplayProjection implements store.ProjectionStore.ReplayProjection.
func (pr Projections) ReplayProjection(ctx context.Context, table, projection string, eventIDs []string) (int64, error) {
	var n int64
	err := pr.d.write(ctx, func() (err error) {
		n, err = pr.d.replay(ctx, table, projection, eventIDs)
		return err
	})
	return n, err
}

func (d *Dialect) replay(ctx context.Context, table, projection string, eventIDs []string) (int64, error) {
	t, err := d.table(table)
	if err != nil {
		return 0, err
	}
	q := "UPDATE " + t + " SET state = 'failed', attempts = 0, next_attempt_at = " + d.Now + ", updated_at = " + d.Now +
		" WHERE projection = ? AND state = 'dead'"
	args := []any{projection}
	if len(eventIDs) > 0 {
		q += " AND event_id IN (" + marks(len(eventIDs)) + ")"
		args = append(args, sqlbuild.StringArgs(eventIDs)...)
	}
	r, err := d.DB.ExecContext(ctx, d.q(q), args...)
	if err != nil {
		return 0, d.wrap("replay projection", err)
	}
	n, err := r.RowsAffected()
	return n, d.wrap("replay projection", err)
}

// ResetProjection implements store.ProjectionStore.ResetProjection.
func (pr Projections) ResetProjection(ctx context.Context, table, projection string, reset func(tx *sql.Tx) error) (int64, error) {
	d := pr.d
	t, err := d.table(table)
	if err != nil {
		return 0, err
	}
	var n int64
	err = d.inTx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, d.q("DELETE FROM "+t+" WHERE projection = ?"), projection)
		if err != nil {
			return err
		}
		if n, err = r.RowsAffected(); err != nil {
			return err
		}
		if reset != nil {
			if err := reset(tx); err != nil {
				return fmt.Errorf("reset hook: %w", err)
			}
		}
		return nil
	})
	return n, d.wrap("reset projection "+projection, err)
}

// CleanupProjection implements store.ProjectionStore.CleanupProjection: it
// picks the oldest done rows, then deletes them by key (done is final, so
// the two statements cannot disagree), which every database runs the same
// way.
func (pr Projections) CleanupProjection(ctx context.Context, table, projection string, olderThan time.Duration, limit int) (int64, error) {
	var n int64
	err := pr.d.write(ctx, func() (err error) {
		n, err = pr.d.cleanup(ctx, table, projection, olderThan, limit)
		return err
	})
	return n, err
}

func (d *Dialect) cleanup(ctx context.Context, table, projection string, olderThan time.Duration, limit int) (int64, error) {
	t, err := d.table(table)
	if err != nil {
		return 0, err
	}
	if olderThan <= 0 || limit <= 0 {
		return 0, nil
	}
	rows, err := d.DB.QueryContext(ctx, d.q("SELECT tenant, event_id FROM "+t+" WHERE projection = ? AND state = 'done' AND "+
		"updated_at < "+d.cutoff()+" ORDER BY updated_at LIMIT ?"), projection, d.DurArg(-olderThan), limit)
	if err != nil {
		return 0, d.wrap("cleanup projection", err)
	}
	var keys []any
	for rows.Next() {
		var tenant, id string
		if err := rows.Scan(&tenant, &id); err != nil {
			rows.Close()
			return 0, d.wrap("cleanup projection", err)
		}
		keys = append(keys, tenant, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(keys) == 0 {
		return 0, d.wrap("cleanup projection", err)
	}
	tuples := make([]string, len(keys)/2)
	for i := range tuples {
		tuples[i] = "(?, ?)"
	}
	r, err := d.DB.ExecContext(ctx, d.q("DELETE FROM "+t+" WHERE projection = ? AND state = 'done' AND (tenant, event_id) IN ("+
		strings.Join(tuples, ", ")+")"), append([]any{projection}, keys...)...)
	if err != nil {
		return 0, d.wrap("cleanup projection", err)
	}
	n, err := r.RowsAffected()
	return n, d.wrap("cleanup projection", err)
}

// ScanOutbox implements store.ProjectionStore.ScanOutbox. The anti-join on
// the projection table's primary key skips finished events, so a scan may
// restart from any id without applying anything twice.
func (pr Projections) ScanOutbox(ctx context.Context, p store.OutboxScanParams) ([]store.Record, error) {
	d := pr.d
	ot, err := d.table(p.Table)
	if err != nil {
		return nil, err
	}
	pt, err := d.table(p.ProjectionTable)
	if err != nil {
		return nil, err
	}
	if d.BeforeScan != nil {
		d.BeforeScan(ctx, pt)
	}
	if p.Limit <= 0 {
		p.Limit = 100
	}
	scope, scopeArgs := sqlbuild.ScopeWhere(p.Scope, "o")
	args := append([]any{p.AfterID}, scopeArgs...)
	args = append(args, p.Projection, p.Limit)
	// "1": every row returned is open; scanRead reads ReadOutbox's columns.
	rows, err := d.DB.QueryContext(ctx, d.q("SELECT o.id, 1, o.event_id, o.tenant, o.topic, o.event_type, o.partition_key, "+
		"o.headers, o.payload, "+d.EpochMS("o.created_at")+", "+d.DiffMS(d.Now, "o.created_at")+
		" FROM "+ot+" o WHERE o.id > ?"+scope+
		" AND NOT EXISTS (SELECT 1 FROM "+pt+" pe WHERE pe.projection = ? AND pe.tenant = o.tenant"+
		" AND pe.event_id = o.event_id AND pe.state IN ('done', 'dead')) ORDER BY o.id LIMIT ?"), args...)
	if err != nil {
		return nil, d.wrap("scan outbox "+p.Table, err)
	}
	defer rows.Close()
	var out []store.Record
	for rows.Next() {
		r, _, err := scanRead(rows)
		if err != nil {
			return nil, d.wrap("scan outbox "+p.Table, err)
		}
		out = append(out, r)
	}
	return out, d.wrap("scan outbox "+p.Table, rows.Err())
}
