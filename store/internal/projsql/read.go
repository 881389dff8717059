package projsql

import (
	"context"
	"database/sql"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// ReadOutbox implements store.ProjectionStore.ReadOutbox. The inner query
// reads a page of rows in id order, the one around it decides per row
// whether it is open (in scope and not finished: one probe of the
// projection table's primary key), and the outer one returns the headers
// and payload of open rows only. Unlike ScanOutbox's anti-join, whose
// LIMIT counts open rows and so may walk every finished one, the rows read
// are bounded. (The page used to be read as ids and joined back to the
// table by id; on a fresh table PostgreSQL planned that join as a hash
// join over the whole table.)
func (pr Projections) ReadOutbox(ctx context.Context, p store.OutboxScanParams) (store.OutboxPage, error) {
	d := pr.d
	q, args, err := pr.ReadOutboxQuery(p)
	if err != nil {
		return store.OutboxPage{}, err
	}
	rows, err := d.DB.QueryContext(ctx, q, args...)
	if err != nil {
		return store.OutboxPage{}, d.wrap("read outbox "+p.Table, err)
	}
	defer rows.Close()
	var page store.OutboxPage
	for rows.Next() {
		r, open, err := scanRead(rows)
		if err != nil {
			return store.OutboxPage{}, d.wrap("read outbox "+p.Table, err)
		}
		page.Visible = append(page.Visible, r.ID)
		if open {
			page.Open = append(page.Open, r)
		}
	}
	return page, d.wrap("read outbox "+p.Table, rows.Err())
}

// ReadOutboxQuery is ReadOutbox's statement and its arguments (for EXPLAIN
// in tests and by hand).
func (pr Projections) ReadOutboxQuery(p store.OutboxScanParams) (string, []any, error) {
	d := pr.d
	ot, err := d.table(p.Table)
	if err != nil {
		return "", nil, err
	}
	pt, err := d.table(p.ProjectionTable)
	if err != nil {
		return "", nil, err
	}
	scope, args := sqlbuild.ScopeWhere(p.Scope, "o")
	args = append(args, p.Projection)
	where := " WHERE o.id > ? ORDER BY o.id LIMIT ?"
	if len(p.IDs) > 0 {
		where = " WHERE o.id IN (" + sqlbuild.Marks(len(p.IDs)) + ")"
		for _, id := range p.IDs {
			args = append(args, id)
		}
	} else {
		if p.Limit <= 0 {
			p.Limit = 500
		}
		args = append(args, p.AfterID, p.Limit)
	}
	// The probe of the projection table sits outside the page's LIMIT:
	// inside it, PostgreSQL costed the probe for every row the id range
	// might hold and hashed the projection's whole ledger instead (a
	// sequential scan per page, growing with every event applied: 175 ms of
	// a 20,000-event ledger per 500-row page, the outbox source's limit).
	// Outside, it is priced for the page's rows: one key lookup each. And
	// it is a scalar subquery, not NOT EXISTS: PostgreSQL plans an EXISTS
	// with a hashed alternative, and chose it for a ledger of 100,000 rows
	// (a fresh table after a bulk load): the whole ledger read and hashed
	// for every page, 55 ms a page where the lookups take 4. A scalar
	// subquery has no such alternative.
	open := "CASE WHEN 1 = 1" + scope + " AND (SELECT 1 FROM " + pt + " pe WHERE pe.projection = ?" +
		" AND pe.tenant = o.tenant AND pe.event_id = o.event_id AND pe.state IN ('done', 'dead') LIMIT 1) IS NULL THEN 1 ELSE 0 END"
	return d.q("SELECT s.id, s.open, s.event_id, s.tenant, s.topic, s.event_type, s.partition_key, " +
		"CASE WHEN s.open = 1 THEN s.headers END, CASE WHEN s.open = 1 THEN s.payload END, " + d.EpochMS("s.created_at") +
		", " + d.DiffMS(d.Now, "s.created_at") + " FROM (SELECT o.*, " + open + " AS open FROM (SELECT * FROM " + ot + " o" + where + ") o) s" +
		" ORDER BY s.id"), args, nil
}

// scanRead scans one row of ReadOutbox's (or ScanOutbox's) query; the
// last column, the row's age in ms on the database clock, is Record.Age,
// so a projection's lag does not depend on the reading host's clock.
func scanRead(rows *sql.Rows) (store.Record, bool, error) {
	var (
		r              store.Record
		open           int
		headers        sql.NullString
		created, ageMS int64
	)
	ev := &r.Event
	if err := rows.Scan(&r.ID, &open, &ev.ID, &ev.Tenant, &ev.Topic, &ev.Type, &ev.PartitionKey, &headers, &ev.Payload,
		&created, &ageMS); err != nil {
		return r, false, err
	}
	ev.Headers, ev.CreatedAt = decodeHeaders(headers.String), time.UnixMilli(created).UTC()
	r.Age = time.Duration(max(ageMS, 0)) * time.Millisecond
	return r, open == 1, nil
}
