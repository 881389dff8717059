package mapsql

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

// A log lane on a mapped table (docs/adopt.md) reads the rows the service
// inserts from the database's log, builds each record here as a claim
// would (the mapped columns, the body template), and writes back only to
// the rows' mapped columns:
//
//   - a delivered row goes from the first pending value to the delivered
//     one (unless the lane leaves it to the table's own retention), in the
//     transaction that records the lane's position under its lease;
//   - a failed event's row goes to the retry value (or dead), due after
//     its backoff: the lane's polling workers claim only that value
//     (store.ClaimParams.HandedOver), so they never take a fresh row the
//     reader publishes.
//
// Each statement changes a row only while it is in the first pending
// value, so a row the old worker claimed meanwhile is left to it.

// LogRows builds records from a mapped table's rows as a log shows them.
type LogRows struct {
	t       *Table
	types   map[string]string // column (lower case) → type (lower case)
	numeric []bool            // per body column: a JSON number
}

// LogRows reads the table's column types for its rows' decoding.
func (t *Table) LogRows(ctx context.Context) (*LogRows, error) {
	types, err := t.ts.d.Columns(ctx, t.ts.db, t.name)
	if err != nil {
		return nil, fmt.Errorf("%s: columns of %s: %w", t.ts.d.Name, t.name, err)
	}
	if len(types) == 0 {
		return nil, fmt.Errorf("%s: mapped table %s does not exist", t.ts.d.Name, t.name)
	}
	lr := &LogRows{t: t, types: types}
	for _, col := range t.m.BodyColumns() {
		lr.numeric = append(lr.numeric, numericType(types[strings.ToLower(col)]))
	}
	return lr, nil
}

// IsInteger says whether column col holds integers.
func (lr *LogRows) IsInteger(col string) bool {
	return lr.t.ts.d.IsInteger(lr.types[strings.ToLower(col)])
}

// Record builds the record of one inserted row from its values by column
// name in lower case: nil for NULL, text or bytes, or a time.Time for a
// datetime. Its ID is a handle that Marks and HandOver take back.
func (lr *LogRows) Record(row map[string]any) store.Record {
	t, m := lr.t, lr.t.m.Columns
	v := func(col string) any {
		if col == "" {
			return nil
		}
		return row[strings.ToLower(col)]
	}
	r := store.Record{Status: store.StatusPending, Attempts: 1}
	r.Event.Payload = []byte(text(v(m.Payload)))
	// The body's columns, then the header columns', as a claim reads them.
	var values []any
	for _, col := range t.m.BodyColumns() {
		values = append(values, v(col))
	}
	for _, name := range store.HeaderNames(t.m.HeaderColumns) {
		values = append(values, v(t.m.HeaderColumns[name]))
	}
	if len(t.m.Body) > 0 {
		r.Event.Payload, r.BodyErr = t.body(r.Event.Payload, values, lr.numeric)
	}
	t.fillEvent(&r, v(m.ID), v(m.Type), v(m.Tenant), v(m.Key), v(m.Topic))
	r.Event.Headers, r.HeadersErr = sqlscan.DecodeHeaders(text(v(m.Headers)))
	t.addHeaders(&r.Event, values)
	r.Event.CreatedAt = logTime(v(m.CreatedAt))
	r.ID = t.handles.add(claimedRow{eventID: r.Event.ID})
	return r
}

// logTime reads a created_at value: a datetime, or epoch milliseconds;
// zero when it is neither (the reader then takes its own clock).
func logTime(v any) time.Time {
	switch v := v.(type) {
	case time.Time:
		return v.UTC()
	case nil:
		return time.Time{}
	}
	ms, err := strconv.ParseInt(text(v), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// MarkLogged marks the rows of delivered log records delivered, in tx
// (the position's transaction), or, with leave, only takes their handles
// back. Rows no longer in the first pending value are left as they are.
func (t *Table) MarkLogged(ctx context.Context, tx Runner, ds []store.Delivery, leave bool) error {
	ids := make([]int64, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	rows, known := t.handles.get(ids)
	t.handles.forget(ids)
	var events []string
	for i, r := range rows {
		if known[i] {
			events = append(events, r.eventID)
		}
	}
	if leave || len(events) == 0 {
		return nil
	}
	c := t.c
	set := c.Status + " = ?"
	if c.DeliveredAt != "" {
		set += ", " + c.DeliveredAt + " = " + t.now()
	}
	q := "UPDATE " + t.quoted + " SET " + set + " WHERE " + c.ID + " IN (" + sqlbuild.Marks(len(events)) + ") AND " + c.Status + " = ?"
	args := append([]any{t.m.Statuses.Delivered}, sqlbuild.StringArgs(events)...)
	_, err := tx.ExecContext(ctx, t.rebind(q), append(args, t.m.Statuses.Pending[0])...)
	return err
}

// HandOverLogged gives failed log events' rows to the lane's polling
// workers, in tx: each in the retry value, due after its RetryIn, the
// failure counted when it was attempted; or in the dead value.
func (t *Table) HandOverLogged(ctx context.Context, tx Runner, fs []store.LogFailure) error {
	for _, f := range fs {
		if err := t.handOverOne(ctx, tx, f); err != nil {
			return fmt.Errorf("%s: handing log event %s of %s over: %w", t.ts.d.Name, f.Record.Event.ID, t.name, err)
		}
	}
	return nil
}

func (t *Table) handOverOne(ctx context.Context, tx Runner, f store.LogFailure) error {
	t.handles.forget([]int64{f.Record.ID})
	c := t.c
	set, args := c.Status+" = ?, "+c.NextAttempt+" = "+t.later(), []any{t.m.Statuses.Retry, f.RetryIn.Milliseconds()}
	if f.Dead {
		set, args = c.Status+" = ?", []any{t.m.Statuses.Dead}
	}
	if f.Error != "" && c.LastError != "" {
		set += ", " + c.LastError + " = ?"
		args = append(args, sqlbuild.TrimError(f.Error))
	}
	if f.Attempted && c.Attempts != "" {
		set += ", " + c.Attempts + " = " + c.Attempts + " + 1"
	}
	q := "UPDATE " + t.quoted + " SET " + set + " WHERE " + c.ID + " = ? AND " + c.Status + " = ?"
	_, err := tx.ExecContext(ctx, t.rebind(q), append(args, f.Record.Event.ID, t.m.Statuses.Pending[0])...)
	return err
}

// HandOverBacklog gives the lane's polling workers the rows of sc in the
// first pending value: those committed before the lane's first position,
// which its stream cannot read (rows committed just after are streamed
// too: published twice, never missed).
func (t *Table) HandOverBacklog(ctx context.Context, sc store.Scope) (int64, error) {
	scope, args := sqlbuild.ScopeWhereColumns(sc, t.c.Tenant, t.c.Type)
	q := "UPDATE " + t.quoted + " SET " + t.c.Status + " = ? WHERE " + t.c.Status + " = ?" + scope
	res, err := t.ts.db.ExecContext(ctx, t.rebind(q), append([]any{t.m.Statuses.Retry, t.m.Statuses.Pending[0]}, args...)...)
	if err != nil {
		return 0, fmt.Errorf("%s: handing over the backlog of %s: %w", t.ts.d.Name, t.name, err)
	}
	return res.RowsAffected()
}

// handedOverOrder is what the polling workers of a log lane claim: the
// retry value, then in-flight rows whose lease ran out (claimOrder).
func (t *Table) handedOverOrder(lease time.Duration) []string {
	order := t.claimOrder(lease)
	out := []string{t.m.Statuses.Retry}
	if last := order[len(order)-1]; last == t.m.Statuses.InFlight {
		out = append(out, last)
	}
	return out
}

// IsDatetime says whether column col holds datetimes.
func (lr *LogRows) IsDatetime(col string) bool {
	return lr.t.ts.d.IsDatetime(lr.types[strings.ToLower(col)])
}

// Forget takes back the handle of a record the reader drops (outside
// the lane's scope), which no mark or hand-over will.
func (lr *LogRows) Forget(rec store.Record) { lr.t.handles.forget([]int64{rec.ID}) }
