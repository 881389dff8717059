package mapsql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

// The operator's reads and changes of a mapped table's rows (herald dead
// list|show|replay|purge). A mapped table has no numeric row id, so its
// rows are listed and paged by event id, and a listed record's ID is the
// number this process gave its event id (refs.go).

// List returns up to p.Limit rows of p.Status whose event id sorts after
// p.AfterEventID (or after the row numbered p.AfterID, refs.go), in event
// id order (store.Store.List). Each record's ID is its number (refs.go).
func (t *Table) List(ctx context.Context, p store.ListParams, defaultLimit int) ([]store.Record, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	status, args := t.statusIn(t.values(p.Status))
	scope, scopeArgs := sqlbuild.ScopeWhereColumns(p.Scope, t.c.Tenant, t.c.Type)
	if p.AfterEventID != "" {
		status += " AND " + t.c.ID + " > ?"
		args = append(args, p.AfterEventID)
	} else if p.AfterID > 0 { // the dashboard's next page: a ref (refs.go)
		var err error
		if status, args, err = t.after(status, args, p.AfterID, false); err != nil {
			return nil, err
		}
	}
	q := "SELECT " + t.readColumns() + " FROM " + t.quoted + " WHERE " + status + scope + " ORDER BY " + t.c.ID + " LIMIT ?"
	args = append(append(args, scopeArgs...), limit)
	rows, err := t.ts.db.QueryContext(ctx, t.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: list %s: %w", t.ts.d.Name, t.name, err)
	}
	recs, err := t.scanRead(rows)
	if err != nil {
		return nil, fmt.Errorf("%s: list %s: %w", t.ts.d.Name, t.name, err)
	}
	t.refs.number(recs)
	return recs, nil
}

// Get returns the row of eventID, or store.ErrNotFound.
func (t *Table) Get(ctx context.Context, eventID string) (store.Record, error) {
	rows, err := t.ts.db.QueryContext(ctx, t.rebind("SELECT "+t.readColumns()+" FROM "+t.quoted+" WHERE "+t.c.ID+" = ?"), eventID)
	if err != nil {
		return store.Record{}, fmt.Errorf("%s: get %s: %w", t.ts.d.Name, t.name, err)
	}
	recs, err := t.scanRead(rows)
	switch {
	case err != nil:
		return store.Record{}, fmt.Errorf("%s: get %s: %w", t.ts.d.Name, t.name, err)
	case len(recs) == 0:
		return store.Record{}, fmt.Errorf("%s: get %s %q: %w", t.ts.d.Name, t.name, eventID, store.ErrNotFound)
	}
	return recs[0], nil
}

// Replay puts dead rows back to the first pending status, due at once,
// with the attempts column (where mapped) at 0: the given event ids, or
// every dead row of s when eventIDs is empty. The last error is kept, as
// on Herald's own tables, until the event fails again.
func (t *Table) Replay(ctx context.Context, s store.Scope, eventIDs []string) (int64, error) {
	set, args := t.c.Status+" = ?, "+t.c.NextAttempt+" = "+t.now(), []any{t.m.Statuses.Pending[0]}
	if t.c.Attempts != "" {
		set += ", " + t.c.Attempts + " = 0"
	}
	return t.onDead(ctx, "replay", s, eventIDs, "UPDATE "+t.quoted+" SET "+set, args)
}

// Purge deletes dead rows: the given event ids, or every dead row of s.
func (t *Table) Purge(ctx context.Context, s store.Scope, eventIDs []string) (int64, error) {
	return t.onDead(ctx, "purge", s, eventIDs, "DELETE FROM "+t.quoted, nil)
}

// onDead runs head (with its arguments) on s's dead rows, or on those of
// eventIDs, in a write transaction, and returns how many rows it changed.
func (t *Table) onDead(ctx context.Context, op string, s store.Scope, eventIDs []string, head string, args []any) (int64, error) {
	scope, scopeArgs := sqlbuild.ScopeWhereColumns(s, t.c.Tenant, t.c.Type)
	q := head + " WHERE " + t.c.Status + " = ?" + scope
	args = append(append(args, t.m.Statuses.Dead), scopeArgs...)
	if len(eventIDs) > 0 {
		q += " AND " + t.c.ID + " IN (" + sqlbuild.Marks(len(eventIDs)) + ")"
		args = append(args, sqlbuild.StringArgs(eventIDs)...)
	}
	var n int64
	err := t.ts.inTx(ctx, func(tx Runner) error {
		res, err := tx.ExecContext(ctx, t.rebind(q), args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %s %s: %w", t.ts.d.Name, op, t.name, err)
	}
	return n, nil
}

// values are the table's status values of Herald's state s.
func (t *Table) values(s store.Status) []string {
	ss := t.m.Statuses
	switch s {
	case store.StatusPending:
		return ss.Pending
	case store.StatusInFlight:
		return []string{ss.InFlight}
	case store.StatusDelivered:
		return []string{ss.Delivered}
	}
	return []string{ss.Dead}
}

// state is Herald's state of the table's status value v; a value no state
// maps is returned as it is, for the operator to see.
func (t *Table) state(v string) store.Status {
	for _, s := range []store.Status{store.StatusPending, store.StatusInFlight, store.StatusDelivered, store.StatusDead} {
		for _, value := range t.values(s) {
			if v == value {
				return s
			}
		}
	}
	return store.Status(v)
}

// readColumns is what List and Get read of a row: the event, the stored
// payload (not a body template's), the attempts, the last error, the lease
// owner, the status and the receipt.
func (t *Table) readColumns() string {
	c := t.c
	created, age := "0", "0"
	if c.CreatedAt != "" {
		created = t.millis(c.CreatedAt)
		age = t.ts.d.NowMs + " - " + created
	}
	return c.ID + ", " + c.Type + ", " + or(c.Tenant, "''") + ", " + or(c.Key, "''") + ", " + or(c.Topic, "''") + ", " +
		or(c.Headers, "''") + ", " + c.Payload + ", " + created + ", " + or(c.Attempts, "0") + ", " +
		or(c.LastError, "''") + ", " + c.LeaseOwner + ", " + c.Status + ", " + age + ", " + or(c.Receipt, "''")
}

// scanRead reads and closes rows of readColumns.
func (t *Table) scanRead(rows *sql.Rows) ([]store.Record, error) {
	defer rows.Close()
	var recs []store.Record
	for rows.Next() {
		var (
			r                                                    store.Record
			id, typ, tenant, key, topic, headers, lastErr, owner any
			status, receipt                                      any
			created, attempts, ageMs                             sql.NullInt64
		)
		ev := &r.Event
		if err := rows.Scan(&id, &typ, &tenant, &key, &topic, &headers, &ev.Payload, &created, &attempts,
			&lastErr, &owner, &status, &ageMs, &receipt); err != nil {
			return nil, err
		}
		t.fillEvent(&r, id, typ, tenant, key, topic)
		ev.Headers, r.HeadersErr = sqlscan.DecodeHeaders(text(headers))
		ev.CreatedAt = time.UnixMilli(created.Int64)
		// A dead row's counter counts its failed publishes, which are its
		// claims: Herald's attempts.
		r.Attempts = int(attempts.Int64)
		r.LastError, r.LeaseOwner, r.Status = text(lastErr), t.worker(text(owner)), t.state(text(status))
		r.Age = time.Duration(max(ageMs.Int64, 0)) * time.Millisecond
		r.Receipt = receiptOf(text(receipt))
		recs = append(recs, r)
	}
	return recs, rows.Err()
}

// fillEvent sets r's event fields read as any (a key may be a BIGINT).
func (t *Table) fillEvent(r *store.Record, id, typ, tenant, key, topic any) {
	ev := &r.Event
	ev.ID, ev.Type, ev.Tenant, ev.PartitionKey, ev.Topic = text(id), text(typ), text(tenant), text(key), text(topic)
	if t.c.Topic == "" {
		ev.Topic = t.name // Herald requires a topic; a table without one has its own name
	}
	if ev.Payload == nil {
		ev.Payload = []byte{}
	}
}

// worker is the worker id in a lease owner column value, without the
// fencing token a claim wrote after it where no fence column holds it.
func (t *Table) worker(owner string) string {
	if t.c.Fence == "" {
		if i := strings.LastIndexByte(owner, '#'); i >= 0 {
			return owner[:i]
		}
	}
	return owner
}
