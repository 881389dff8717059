package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// HandOver writes failed (or parked) log events to their rows for the
// lane's polling workers, in one transaction, once the transactions that
// wrote the rows are visible (logical_visible.go); events without a row
// (logical messages) are inserted. A row no longer pending (handed over or
// settled when the batch was read before a restart) is left as it is.
func (s *Store) HandOver(ctx context.Context, table, lane string, fs []store.LogFailure) error {
	if err := s.awaitVisible(ctx, rowTxns(fs)); err != nil {
		return err
	}
	if t := s.mapped.Get(table); t != nil {
		return s.handOverMapped(ctx, t, fs)
	}
	return s.logs.HandOver(ctx, table, lane, fs, handOverOne)
}

// rowTxns is the transactions that wrote the rows of fs.
func rowTxns(fs []store.LogFailure) []uint32 {
	var xids []uint32
	for _, f := range fs {
		if f.Record.ID > 0 && f.Record.Txn != 0 {
			xids = append(xids, uint32(f.Record.Txn))
		}
	}
	return xids
}

func handOverOne(ctx context.Context, tx *sql.Tx, table, owner string, f store.LogFailure) error {
	status := "pending"
	if f.Dead {
		status = "dead"
	}
	msg := sqlbuild.TrimError(f.Error)
	if f.Record.ID == 0 {
		return insertHandedOver(ctx, tx, table, owner, status, f, msg)
	}
	// An attempted event counts the attempt and backs off; a parked or
	// delayed one keeps its attempts and available_at; a dead one dies now
	// (Kill's convention: available_at is the time of death).
	// The failure joins the row's attempt history as a polling worker's
	// would (SET terms read the row as it was: the attempt's number is
	// the count after it).
	_, err := tx.ExecContext(ctx, "UPDATE "+table+` t SET status = $2, lease_owner = $3,
  attempts = attempts + CASE WHEN $5 THEN 1 ELSE 0 END,
  last_error = CASE WHEN $4 = '' THEN last_error ELSE $4 END,
  attempt_errors = CASE WHEN $4 = '' THEN attempt_errors ELSE `+
		attemptErrorAppended("t.attempts + CASE WHEN $5 THEN 1 ELSE 0 END", "$4::text")+` END,
  available_at = CASE WHEN $2 = 'dead' THEN now() WHEN $5 THEN now() + $6 * interval '1 microsecond' ELSE available_at END
WHERE id = $1 AND status = 'pending'`, f.Record.ID, status, owner, msg, f.Attempted, sqlbuild.Micros(f.RetryIn))
	return err
}

// insertHandedOver gives a logical message a row of its own.
func insertHandedOver(ctx context.Context, tx *sql.Tx, table, owner, status string, f store.LogFailure, msg string) error {
	ev := f.Record.Event
	headers := []byte("{}")
	if len(ev.Headers) > 0 {
		headers, _ = json.Marshal(ev.Headers) // a map of strings always encodes
	}
	attempts := 0
	if f.Attempted {
		attempts = 1
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO "+table+` (event_id, tenant, topic, event_type, partition_key, headers, payload,
  status, attempts, last_error, lease_owner, available_at, attempt_errors)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now() + $12 * interval '1 microsecond',
  CASE WHEN $10 = '' THEN NULL ELSE jsonb_build_array(jsonb_build_object('n', $9::int,
    'at', floor(extract(epoch FROM now()) * 1000)::bigint, 'e', $10::text)) END) ON CONFLICT (event_id) DO NOTHING`,
		ev.ID, ev.Tenant, ev.Topic, ev.Type, ev.PartitionKey, string(headers), ev.Payload, status, attempts, msg, owner,
		sqlbuild.Micros(f.RetryIn))
	return err
}

// applyBound bounds how long an ApplyMarks transaction may wait on a lock
// or sit idle (boundSettings).
const applyBound = 10 * time.Second

// journalMarks writes a recorded batch's delivered rows into
// herald_log_marks, in the position's transaction: one narrow row instead
// of an update of every outbox row, which ApplyMarks does later in bulk.
func journalMarks(ctx context.Context, tx *sql.Tx, p store.LogParams, relid uint32, ds []store.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	ids := make([]int64, len(ds))
	receipts := make([]string, len(ds))
	for i, d := range ds {
		ids[i], receipts[i] = d.ID, d.Receipt.JSON()
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO herald_log_marks (lane, table_name, table_id, ids, receipts) VALUES ($1, $2, $3, $4, $5)`,
		p.Lane, p.Table, int64(relid), ids, receipts)
	return err
}

// ApplyMarks marks delivered (or deletes, when deleteRows) the rows of up
// to limit journaled batches of the lane and deletes those batches, in one
// transaction; SKIP LOCKED lets several processes apply marks at once. Rows
// the bulk statement did not settle are looked at again (settleMissed), so
// that none leaves the journal unaccounted for.
func (s *Store) ApplyMarks(ctx context.Context, table, lane string, limit int, deleteRows bool) (store.MarksApplied, error) {
	if s.mapped.Get(table) != nil {
		return store.MarksApplied{}, nil // marked as recorded (logical_mapped.go)
	}
	return s.logs.ApplyMarks(ctx, table, lane, func(ctx context.Context, tx *sql.Tx, q string) (store.MarksApplied, error) {
		// Asynchronous commit as the polling lanes' marks: a crash can lose
		// the transaction, journal row and marks together, never one alone.
		if _, err := tx.ExecContext(ctx, asyncCommit, boundArg(applyBound)); err != nil {
			return store.MarksApplied{}, err
		}
		return settleJournal(ctx, tx, q, table, lane, limit, deleteRows)
	})
}

// settleJournal applies up to limit journaled batches of lane's rows in
// table (q quoted) within tx: the bulk statement, then a look at the rows
// it did not settle.
func settleJournal(ctx context.Context, tx *sql.Tx, q, table, lane string, limit int, deleteRows bool) (store.MarksApplied, error) {
	res, missed, err := applyJournal(ctx, tx, q, table, lane, limit, deleteRows)
	if err != nil || len(missed) == 0 {
		return res, err
	}
	return res, settleMissed(ctx, tx, q, missed, deleteRows, &res)
}

// journaled is one journaled row: its id and receipt.
type journaled struct {
	id      int64
	receipt string
}

// settleSQL marks delivered (or deletes) the rows of d (id, receipt) still
// pending and not handed over, and returns their ids.
func settleSQL(q string, deleteRows bool) string {
	// status || '' keeps the planner off the claim index: with every row of
	// a log lane pending it chose a scan of the whole index and a hash join
	// (277 ms for 1,000 rows of 30,000) over 1,000 primary-key probes.
	if deleteRows {
		// A delete leaves the row's index entries to vacuum; the update
		// writes new ones in all seven indexes (it is never HOT: status is
		// indexed).
		return `DELETE FROM ` + q + ` t USING d WHERE t.id = d.id AND (t.status || '') = 'pending' AND t.lease_owner = '' RETURNING t.id`
	}
	return `UPDATE ` + q + ` t SET status = 'delivered', delivered_at = now(), available_at = now(), receipt = d.receipt
  FROM d WHERE t.id = d.id AND (t.status || '') = 'pending' AND t.lease_owner = '' RETURNING t.id`
}

// applyJournal takes up to limit journal batches of lane's rows in table
// (q quoted), settles their rows in one statement and returns the counts
// and the rows it did not settle. The first row of the answer carries the
// counts (its id is NULL). A journal row of another table is never
// applied here: its ids name rows of that table; nor one of a table of the
// same name since dropped (another table_id): its rows count as gone.
func applyJournal(ctx context.Context, tx *sql.Tx, q, table, lane string, limit int, deleteRows bool) (store.MarksApplied, []journaled, error) {
	var res store.MarksApplied
	rows, err := tx.QueryContext(ctx, `WITH done AS (DELETE FROM herald_log_marks WHERE id IN (
  SELECT id FROM herald_log_marks WHERE lane = $1 AND table_name = $3 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
  RETURNING ids, receipts, table_id IN (0, to_regclass($4)::oid::bigint) AS ours),
d AS (SELECT u.id, u.receipt FROM done, unnest(done.ids, done.receipts) AS u(id, receipt) WHERE done.ours),
upd AS (`+settleSQL(q, deleteRows)+`)
SELECT NULL::bigint, NULL::text, (SELECT count(*) FROM done), (SELECT count(*) FROM upd),
  (SELECT COALESCE(sum(cardinality(ids)), 0) FROM done WHERE NOT ours)
UNION ALL
SELECT d.id, d.receipt, 0, 0, 0 FROM d WHERE NOT EXISTS (SELECT 1 FROM upd WHERE upd.id = d.id)`, lane, limit, table, q)
	if err != nil {
		return res, nil, err
	}
	defer rows.Close()
	var missed []journaled
	for rows.Next() {
		var id sql.NullInt64
		var receipt sql.NullString
		var batches, marked, dropped int
		if err := rows.Scan(&id, &receipt, &batches, &marked, &dropped); err != nil {
			return res, nil, err
		}
		if !id.Valid {
			res.Batches, res.Marked, res.Gone = batches, marked, dropped
			continue
		}
		missed = append(missed, journaled{id: id.Int64, receipt: receipt.String})
	}
	return res, missed, rows.Err()
}

// settleMissed accounts for the journaled rows the bulk statement did not
// settle, in a later statement (a newer snapshot): rows still pending
// without an owner are settled now, rows in another state count as
// settled, rows not in the table as gone.
func settleMissed(ctx context.Context, tx *sql.Tx, q string, missed []journaled, deleteRows bool, res *store.MarksApplied) error {
	ids := make([]int64, len(missed))
	receipts := make([]string, len(missed))
	for i, m := range missed {
		ids[i], receipts[i] = m.id, m.receipt
	}
	var marked, present int
	err := tx.QueryRowContext(ctx, `WITH d AS (SELECT * FROM unnest($1::bigint[], $2::text[]) AS u(id, receipt)),
upd AS (`+settleSQL(q, deleteRows)+`)
SELECT (SELECT count(*) FROM upd), (SELECT count(*) FROM `+q+` t WHERE t.id = ANY($1))`, ids, receipts).Scan(&marked, &present)
	if err != nil {
		return err
	}
	// The count of present rows runs on the statement's snapshot, before
	// upd's changes: a row marked here counts as present, a row deleted
	// here too.
	res.Marked += marked
	res.Settled += present - marked
	res.Gone += len(missed) - present
	return nil
}

// HandedOverKeys lists the keys of scope with unfinished handed-over rows.
func (s *Store) HandedOverKeys(ctx context.Context, lane string, sc store.Scope, parkOnDead bool) ([][2]string, error) {
	if s.mapped.Get(sc.Table) != nil {
		return nil, nil // a mapped lane is not ordered by key
	}
	return s.logs.HandedOverKeys(ctx, lane, sc, parkOnDead)
}
