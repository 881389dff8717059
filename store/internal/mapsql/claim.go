package mapsql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

// Claim leases up to p.Limit claimable rows in one transaction: due
// pending rows by their next attempt, then in-flight rows whose lease ran
// out (an old worker's as well as Herald's), each read locking its rows
// with SKIP LOCKED, so that Herald and another worker claiming the same
// way take disjoint rows. The rows are then set in flight under the
// claim's owner and token with a lease on the database clock.
func (t *Table) Claim(ctx context.Context, p store.ClaimParams) ([]store.Record, error) {
	if p.Limit <= 0 || p.Lease <= 0 {
		return nil, fmt.Errorf("%s: claim from %s: limit %d and lease %v must be positive", t.ts.d.Name, t.name, p.Limit, p.Lease)
	}
	t.learnTable(ctx)
	if err := t.ownerFits(t.owner(p.Owner, p.Token)); err != nil {
		return nil, fmt.Errorf("%s: claim from %s: %w", t.ts.d.Name, t.name, err)
	}
	order := t.claimOrder
	if p.HandedOver {
		order = t.handedOverOrder // a log lane's workers (logrows.go)
	}
	recs, err := t.claimRows(ctx, p, order(p.Lease))
	if err != nil {
		return nil, fmt.Errorf("%s: claim from %s: %w", t.ts.d.Name, t.name, err)
	}
	owner := t.owner(p.Owner, p.Token)
	for i := range recs {
		recs[i].ID = t.handles.add(claimedRow{eventID: recs[i].Event.ID, owner: owner})
	}
	return recs, nil
}

// claimRows locks and leases the rows of a claim: in one statement where
// the database returns what an UPDATE changed (returning.go), else a read
// of each status value's due rows, then the lease, in one transaction.
func (t *Table) claimRows(ctx context.Context, p store.ClaimParams, order []string) ([]store.Record, error) {
	if p.Ordered {
		return t.claimOrdered(ctx, p, order)
	}
	if t.ts.d.Returning {
		return t.claimReturning(ctx, p, order)
	}
	var recs []store.Record
	err := t.ts.inClaimTx(ctx, p.Lease, func(tx ClaimRunner) error {
		recs = nil
		for _, status := range order {
			room := p.Limit - len(recs)
			if room == 0 {
				break
			}
			quietKey := t.quietKey(status, p.Scope)
			if t.quiet.skip(quietKey) {
				continue
			}
			due, err := t.lockDue(ctx, tx, p, status, room)
			if err != nil {
				return err
			}
			t.quiet.note(quietKey, len(due) == 0)
			recs = append(recs, due...)
		}
		return t.lease(ctx, tx, p, recs)
	})
	return recs, err
}

// claimOrdered is claimRows for a lane ordered by key (ordered.go): its
// reads look for earlier rows of each key, in a plain transaction.
func (t *Table) claimOrdered(ctx context.Context, p store.ClaimParams, order []string) ([]store.Record, error) {
	var recs []store.Record
	err := t.ts.inTx(ctx, func(tx Runner) error {
		var err error
		if recs, err = t.lockOrdered(ctx, tx, p, order); err != nil {
			return err
		}
		return t.lease(ctx, tx, p, recs)
	})
	return recs, err
}

// claimOrder is the status values a claim reads, one range each: every
// pending value, starting from the next one at each claim (so that
// retries are not starved by a steady flow of new rows, nor the other
// way round), then the in-flight value for leases that ran out. One value
// per read lets a (status, next_attempt) index serve the ORDER BY: an IN
// list of several made every claim sort all the pending rows (MariaDB
// drained a 20,000-row backlog at 963 events/s that way, a sixth of
// Herald's own table).
//
// Expired leases are looked for at most every min(1 s, lease/4): under
// load the look measured a third of the claim's time on MariaDB, and a
// crashed worker's rows wait that much longer at most, against leases of
// several seconds. The pace is on the local clock; whether a lease ran
// out is the database's call.
func (t *Table) claimOrder(lease time.Duration) []string {
	pending := t.m.Statuses.Pending
	start := int(t.claims.Add(1) % uint64(len(pending)))
	order := append(slices.Clone(pending[start:]), pending[:start]...)
	now := time.Now().UnixNano()
	if next := t.nextExpired.Load(); now < next {
		return order
	}
	t.nextExpired.Store(now + int64(min(time.Second, lease/4)))
	return append(order, t.m.Statuses.InFlight)
}

// lockDue locks up to limit due rows of one status: pending ones past
// their next attempt, or in-flight ones past their lease. Under a backlog
// it starts after the table's cursor (see cursor.go).
func (t *Table) lockDue(ctx context.Context, tx ClaimRunner, p store.ClaimParams, status string, limit int) ([]store.Record, error) {
	due := t.dueColumn(status)
	scope, scopeArgs := sqlbuild.ScopeWhereColumns(p.Scope, t.c.Tenant, t.c.Type)
	key := t.cursorKey(status, p.Scope)
	from, fromOK := t.cursors.get(key)
	order, args := due, append([]any{status}, scopeArgs...)
	if key != "" {
		order += ", " + t.c.ID
	}
	if fromOK {
		// The form the range optimizer turns into two index ranges, (status,
		// due > d) and (status, due = d, id > i): InnoDB's secondary entries
		// end with the primary key. "due >= d AND (…)" walked every entry
		// of the cursor's own due time, a whole insert batch's.
		scope += " AND (" + due + " > ? OR " + due + " = ? AND " + t.c.ID + " > ?)"
		args = append(args, from.due, from.due, from.id)
	}
	table := t.quoted
	if ix, _ := t.claimIndex.Load().(string); key != "" && ix != "" {
		table += " FORCE INDEX (" + t.ts.d.Quote(ix) + ")"
	}
	q := "SELECT " + t.recordColumns(due) + " FROM " + table + " WHERE " + t.c.Status + " = ? AND " + due + " <= " + t.now() +
		scope + " ORDER BY " + order + " LIMIT ?" + t.ts.d.Lock
	rows, err := tx.QueryContext(ctx, t.rebind(q), append(args, limit)...)
	if err != nil {
		return nil, err
	}
	recs, last, err := t.scanRecords(rows)
	if err == nil {
		t.cursors.advance(key, len(recs) == limit, last)
	}
	return recs, err
}

// dueColumn is the time column that makes a row of status claimable: the
// next attempt, or for the in-flight value the lease end.
func (t *Table) dueColumn(status string) string {
	if status == t.m.Statuses.InFlight {
		return t.c.LeaseUntil
	}
	return t.c.NextAttempt
}

// Preview reads up to limit rows a claim would take (store.Previewer):
// the due rows of each pending value in turn, then in-flight rows whose
// lease ran out, each by its due time and id, without locks, writes or a
// cursor. (A claim starts from another pending value each time, so that
// neither starves, and under a backlog from its cursor; a preview always
// starts from the first value and the oldest row.)
func (t *Table) Preview(ctx context.Context, s store.Scope, limit int) ([]store.Record, error) {
	var recs []store.Record
	for _, status := range append(slices.Clone(t.m.Statuses.Pending), t.m.Statuses.InFlight) {
		if len(recs) >= limit {
			break
		}
		due := t.dueColumn(status)
		scope, args := sqlbuild.ScopeWhereColumns(s, t.c.Tenant, t.c.Type)
		q := "SELECT " + t.recordColumns(due) + " FROM " + t.quoted + " WHERE " + t.c.Status + " = ? AND " + due + " <= " +
			t.now() + scope + " ORDER BY " + due + ", " + t.c.ID + " LIMIT ?"
		rows, err := t.ts.db.QueryContext(ctx, t.rebind(q), append(append([]any{status}, args...), limit-len(recs))...)
		if err != nil {
			return nil, fmt.Errorf("%s: preview %s: %w", t.ts.d.Name, t.name, err)
		}
		read, _, err := t.scanRecords(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: preview %s: %w", t.ts.d.Name, t.name, err)
		}
		recs = append(recs, read...)
	}
	return recs, nil
}

// recordColumns is what a claim reads of a row; due is the time column
// that made it claimable (the record's DueFor).
func (t *Table) recordColumns(due string) string { return t.recordColumnsDue(t.millis(due)) }

// recordColumnsDue is recordColumns with the due time given in Unix
// milliseconds (an expression).
func (t *Table) recordColumnsDue(dueMs string) string {
	c, now := t.c, t.ts.d.NowMs
	created, age := "0", "0"
	if c.CreatedAt != "" {
		created = t.millis(c.CreatedAt)
		age = now + " - " + created
	}
	return c.ID + ", " + c.Type + ", " + or(c.Tenant, "''") + ", " + or(c.Key, "''") + ", " + or(c.Topic, "''") + ", " +
		or(c.Headers, "''") + ", " + c.Payload + ", " + created + ", " + or(c.Attempts, "0") + ", " +
		now + ", " + dueMs + ", " + age + t.extraColumns() + t.receiptColumn()
}

// receiptColumn is ", receipt" where the table maps one: a claim reads
// the number of the event's last replay from it (replaynext.go), for the
// broker's dedupe id. It comes after extraColumns, last.
func (t *Table) receiptColumn() string {
	if t.c.Receipt == "" {
		return ""
	}
	return ", " + t.c.Receipt
}

// recordFields is how many columns recordColumns reads before extraColumns.
const recordFields = 12

// scanRecords reads and closes rows of recordColumns. It also returns
// the position of the last row, in the order read.
func (t *Table) scanRecords(rows *sql.Rows) ([]store.Record, position, error) {
	defer rows.Close()
	var last position
	numeric, err := numericColumns(rows, recordFields)
	if err != nil {
		return nil, last, err
	}
	var recs []store.Record
	for rows.Next() {
		var (
			id, typ, tenant, key, topic, headers   any
			r                                      store.Record
			created, attempts, nowMs, dueMs, ageMs sql.NullInt64
		)
		ev := &r.Event
		values := make([]any, len(numeric))
		dest := []any{&id, &typ, &tenant, &key, &topic, &headers, &ev.Payload, &created, &attempts, &nowMs, &dueMs, &ageMs}
		for i := range values {
			dest = append(dest, &values[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, last, err
		}
		if len(t.m.Body) > 0 {
			body, err := t.body(ev.Payload, values, numeric)
			ev.Payload, r.BodyErr = body, err
		}
		t.fillEvent(&r, id, typ, tenant, key, topic)
		ev.Headers, r.HeadersErr = sqlscan.DecodeHeaders(text(headers))
		t.addHeaders(ev, values)
		ev.CreatedAt = time.UnixMilli(created.Int64)
		// The mapped counter counts failed publishes; a claim's record
		// counts this one too, as Herald's attempts do.
		r.Attempts = int(attempts.Int64) + 1
		r.DueFor = time.Duration(max(nowMs.Int64-dueMs.Int64, 0)) * time.Millisecond
		last = position{due: dueMs.Int64, id: ev.ID}
		r.Age = time.Duration(max(ageMs.Int64, 0)) * time.Millisecond
		r.Status = store.StatusInFlight
		if t.c.Receipt != "" {
			r.Receipt.Replay = receiptOf(text(values[len(values)-1])).Replay
		}
		recs = append(recs, r)
	}
	return recs, last, rows.Err()
}

// text is a column's value as text, whatever its type (a user id may be
// a BIGINT, a payload JSON); NULL is "".
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// lease sets recs in flight under p's owner and token.
func (t *Table) lease(ctx context.Context, tx ClaimRunner, p store.ClaimParams, recs []store.Record) error {
	if len(recs) == 0 {
		return nil
	}
	c := t.c
	set, args := t.leaseSet(p)
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.Event.ID
		recs[i].LeaseOwner = p.Owner
		recs[i].AvailableAt = time.Now().Add(p.Lease)
	}
	q := t.updateByID() + set + " WHERE " + c.ID + " IN (" + sqlbuild.Marks(len(ids)) + ")"
	_, err := tx.ExecContext(ctx, t.rebind(q), append(args, sqlbuild.StringArgs(ids)...)...)
	return err
}

// owner is what the claim writes into the lease owner column: the worker
// id, and the token after it when no fence column holds it.
func (t *Table) owner(owner string, token int64) string {
	if t.c.Fence != "" {
		return owner
	}
	return owner + "#" + strconv.FormatInt(token, 36)
}
