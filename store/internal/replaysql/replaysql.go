// Package replaysql is search and replay by query (store.QueryReplayer)
// over one database's SQL pieces, for the three stores.
package replaysql

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// EventWhere returns the " AND …" conditions, with ? placeholders, that
// select q's rows (its scope included), and their arguments. timeArg turns
// a time into the database's created_at value.
func EventWhere(q store.EventQuery, timeArg func(time.Time) any) (string, []any) {
	where, args := sqlbuild.ScopeWhere(q.Scope, "")
	var b strings.Builder
	b.WriteString(where)
	in := func(col string, vals []string) {
		if len(vals) == 0 {
			return
		}
		b.WriteString(" AND " + col + " IN (" + sqlbuild.Marks(len(vals)) + ")")
		args = append(args, sqlbuild.StringArgs(vals)...)
	}
	statuses := make([]string, len(q.Statuses))
	for i, s := range q.Statuses {
		statuses[i] = string(s)
	}
	in("status", statuses)
	in("event_type", q.Types)
	in("partition_key", q.Keys)
	in("event_id", q.EventIDs)
	if len(q.RowIDs) > 0 {
		b.WriteString(" AND id IN (" + sqlbuild.Marks(len(q.RowIDs)) + ")")
		args = append(args, sqlbuild.Int64Args(q.RowIDs)...)
	}
	if !q.Since.IsZero() {
		b.WriteString(" AND created_at >= ?")
		args = append(args, timeArg(q.Since))
	}
	if !q.Until.IsZero() {
		b.WriteString(" AND created_at < ?")
		args = append(args, timeArg(q.Until))
	}
	return b.String(), args
}

// Replayer implements store.QueryReplayer over one database's SQL: the
// MySQL, PostgreSQL and SQLite stores differ only in these fields.
type Replayer struct {
	Name    string // "mysql store", the prefix of errors
	DB      *sql.DB
	Quote   func(table string) (string, error)
	Now     string              // the database clock in SQL, as its time columns hold it
	Bind    func(string) string // ? placeholders to the driver's; nil keeps them
	TimeArg func(time.Time) any // a time as a created_at argument
	// Columns is the select list of a record read and Scan reads it.
	Columns string
	Scan    func(*sql.Rows) ([]store.Record, error)
	// Lock ends the selecting SELECT (" FOR UPDATE"), so that no other
	// transaction changes the rows before they are updated; "" where the
	// transaction is the only writer (SQLite).
	Lock string
	// Touch is extra assignments for changed rows (", updated_at = …").
	Touch string
	// DeliveredAt is the stored column of the delivery time, which a replay
	// clears: "delivered_at" when empty (MySQL's is delivered_at_stored).
	DeliveredAt string
	// Receipt is the stored column of the receipt, where a replay writes its
	// number ("receipt" when empty), and ReceiptValue, when set, turns the
	// receipt's JSON into what that column holds (MySQL pads it).
	Receipt      string
	ReceiptValue func(string) string
	// InTx runs f in one of the store's write transactions; Exec runs one
	// write statement and returns the rows it changed.
	InTx func(ctx context.Context, f func(tx *sql.Tx) error) error
	Exec func(ctx context.Context, q string, args ...any) (int64, error)
}

func (r Replayer) bind(q string) string {
	if r.Bind == nil {
		return q
	}
	return r.Bind(q)
}

func (r Replayer) fail(op, table string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %s %s: %w", r.Name, op, table, err)
}

// table validates q and quotes its table.
func (r Replayer) table(q store.EventQuery) (string, error) {
	if err := q.Validate(); err != nil {
		return "", err
	}
	return r.Quote(q.Table)
}

// CountEvents counts the rows q selects (a plain read).
func (r Replayer) CountEvents(ctx context.Context, q store.EventQuery) (int64, error) {
	qt, err := r.table(q)
	if err != nil {
		return 0, err
	}
	where, args := EventWhere(q, r.TimeArg)
	var n int64
	err = r.DB.QueryRowContext(ctx, r.bind("SELECT COUNT(*) FROM "+qt+" WHERE 1 = 1"+where), args...).Scan(&n)
	return n, r.fail("count events", q.Table, err)
}

// FindEvents returns up to limit rows q selects with ids above afterID,
// in id order; with q.NewestFirst, rows with ids below afterID (any id
// when it is 0), in descending id order.
func (r Replayer) FindEvents(ctx context.Context, q store.EventQuery, afterID int64, limit int) ([]store.Record, error) {
	qt, err := r.table(q)
	if err != nil {
		return nil, err
	}
	where, wargs := EventWhere(q, r.TimeArg)
	bound, order := "id > ?", "id"
	if q.NewestFirst {
		bound, order = "id < ?", "id DESC"
		if afterID <= 0 {
			afterID = math.MaxInt64
		}
	}
	args := append(append([]any{afterID}, wargs...), limit)
	rows, err := r.DB.QueryContext(ctx, r.bind("SELECT "+r.Columns+" FROM "+qt+" WHERE "+bound+where+
		" ORDER BY "+order+" LIMIT ?"), args...)
	if err != nil {
		return nil, r.fail("find events", q.Table, err)
	}
	recs, err := r.Scan(rows)
	return recs, r.fail("find events", q.Table, err)
}

// ReplayNext replays the next batch of b in one transaction.
func (r Replayer) ReplayNext(ctx context.Context, b store.ReplayBatch) ([]int64, error) {
	if err := checkBatch(b); err != nil {
		return nil, err
	}
	qt, err := r.Quote(b.Query.Table)
	if err != nil {
		return nil, err
	}
	var ids []int64
	err = r.InTx(ctx, func(tx *sql.Tx) error {
		ids, err = r.next(ctx, tx, qt, b)
		return err
	})
	if err != nil {
		return nil, r.fail("replay", b.Query.Table, err)
	}
	return ids, nil
}

// ReplayHistory returns eventID's replays, oldest first.
func (r Replayer) ReplayHistory(ctx context.Context, table, eventID string) ([]store.Replay, error) {
	rows, err := r.DB.QueryContext(ctx, r.bind(`SELECT row_id, from_status, replayed_at, replayed_by, reason
FROM herald_replays WHERE table_name = ? AND event_id = ? ORDER BY id`), table, eventID)
	if err != nil {
		return nil, r.fail("replay history", table, err)
	}
	defer rows.Close()
	var out []store.Replay
	for rows.Next() {
		e := store.Replay{Table: table, EventID: eventID}
		var at any
		if err := rows.Scan(&e.RowID, &e.From, &at, &e.By, &e.Reason); err != nil {
			return nil, r.fail("replay history", table, err)
		}
		if e.At, err = timeOf(at); err != nil {
			return nil, r.fail("replay history", table, err)
		}
		out = append(out, e)
	}
	return out, r.fail("replay history", table, rows.Err())
}

// timeOf reads a time column: a time (MySQL, PostgreSQL) or Unix ms (SQLite).
func timeOf(v any) (time.Time, error) {
	switch t := v.(type) {
	case time.Time:
		return t.UTC(), nil
	case int64:
		return time.UnixMilli(t).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("replayed_at: %T is not a time", v)
}

// RetryNow makes the scope's pending rows of eventIDs due at once.
func (r Replayer) RetryNow(ctx context.Context, sc store.Scope, eventIDs []string) (int64, error) {
	if len(eventIDs) == 0 {
		return 0, nil
	}
	qt, err := r.Quote(sc.Table)
	if err != nil {
		return 0, err
	}
	scope, args := sqlbuild.ScopeWhere(sc, "")
	n, err := r.Exec(ctx, r.bind("UPDATE "+qt+" SET available_at = "+r.Now+r.Touch+
		" WHERE status = 'pending' AND event_id IN ("+sqlbuild.Marks(len(eventIDs))+")"+scope),
		append(sqlbuild.StringArgs(eventIDs), args...)...)
	return n, r.fail("retry now", sc.Table, err)
}

// next replays the next rows of b in tx; qt is the quoted table.
func (r Replayer) next(ctx context.Context, tx *sql.Tx, qt string, b store.ReplayBatch) ([]int64, error) {
	sel, err := r.pick(ctx, tx, qt, b)
	if err != nil || len(sel) == 0 {
		return nil, err
	}
	ids := make([]int64, len(sel))
	byReplay := map[int][]int64{}
	entries := make([]any, 0, 6*len(sel))
	for i, p := range sel {
		ids[i] = p.id
		byReplay[p.replay] = append(byReplay[p.replay], p.id)
		entries = append(entries, b.Query.Table, p.eventID, p.id, p.from, b.By, b.Reason)
	}
	for replay, group := range byReplay {
		if err := r.pending(ctx, tx, qt, replay, group); err != nil {
			return nil, err
		}
	}
	values := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, "+r.Now+", ?, ?), ", len(sel)), ", ")
	if _, err := tx.ExecContext(ctx, r.bind("INSERT INTO herald_replays (table_name, event_id, row_id, from_status, "+
		"replayed_at, replayed_by, reason) VALUES "+values), entries...); err != nil {
		return nil, err
	}
	return ids, nil
}

// picked is a row a replay batch takes: its id, event id, state, and the
// number of the replay it is about to get.
type picked struct {
	id            int64
	eventID, from string
	replay        int
}

// pick selects (and, where the database needs it, locks) the rows of b.
func (r Replayer) pick(ctx context.Context, tx *sql.Tx, qt string, b store.ReplayBatch) ([]picked, error) {
	where, wargs := EventWhere(b.Query, r.TimeArg)
	args := append(append([]any{b.AfterID}, wargs...), b.Limit)
	rows, err := tx.QueryContext(ctx, r.bind("SELECT id, event_id, status, receipt FROM "+qt+" WHERE id > ?"+where+
		" ORDER BY id LIMIT ?"+r.Lock), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var sel []picked
	for rows.Next() {
		var p picked
		var receipt sql.NullString
		if err := rows.Scan(&p.id, &p.eventID, &p.from, &receipt); err != nil {
			return nil, err
		}
		var last store.Receipt
		_ = json.Unmarshal([]byte(receipt.String), &last) // unreadable: counted as never replayed
		p.replay = last.Replay + 1
		sel = append(sel, p)
	}
	return sel, rows.Err()
}

// pending moves the rows ids back to pending, claimable now, attempts reset,
// with a receipt that holds only the replay's number: the relay reads it
// to give the broker a new dedupe id (broker.DedupeID), and the old
// receipt described a delivery this replay undoes.
func (r Replayer) pending(ctx context.Context, tx *sql.Tx, qt string, replay int, ids []int64) error {
	receipt := store.Receipt{Replay: replay}.JSON()
	if r.ReceiptValue != nil {
		receipt = r.ReceiptValue(receipt)
	}
	res, err := tx.ExecContext(ctx, r.bind("UPDATE "+qt+" SET status = 'pending', attempts = 0, available_at = "+r.Now+
		", "+cmp.Or(r.DeliveredAt, "delivered_at")+" = NULL, "+cmp.Or(r.Receipt, "receipt")+" = ?"+r.Touch+
		" WHERE id IN ("+sqlbuild.Marks(len(ids))+") AND status IN ('delivered', 'dead')"),
		append([]any{receipt}, sqlbuild.Int64Args(ids)...)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(ids)) {
		return fmt.Errorf("replayed %d of the %d rows selected (%v): rolled back", n, len(ids), err)
	}
	return nil
}

// checkBatch says what is wrong with b before it reaches the database.
func checkBatch(b store.ReplayBatch) error {
	if err := b.Query.ValidateReplay(); err != nil {
		return err
	}
	if b.Limit <= 0 {
		return fmt.Errorf("replay: limit %d is not positive", b.Limit)
	}
	return nil
}
