package binlog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqltx"
	"github.com/heraldhq/herald/store/mysql"
)

// retryable reports a lost deadlock (1213) or a lock wait timeout (1205).
func retryable(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// inTx runs f in a READ COMMITTED transaction, retrying deadlocks.
func (s *Store) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	return sqltx.InTx(ctx, s.DB(), retryable, f)
}

// HandOver writes failed (or parked) log events to their rows for the
// lane's polling workers, in one transaction.
func (s *Store) HandOver(ctx context.Context, table, lane string, fs []store.LogFailure) error {
	if t := s.Mapped(table); t != nil {
		return s.handOverMapped(ctx, t, fs)
	}
	return s.logs.HandOver(ctx, table, lane, fs, handOverOne)
}

// handOverOne updates one row: an attempted event counts the attempt and
// backs off; a parked one keeps its attempts and available_at; a dead one
// dies now (Kill's convention: available_at is the time of death). Every
// binlog event has a row (there are no row-less messages here).
func handOverOne(ctx context.Context, tx *sql.Tx, table, owner string, f store.LogFailure) error {
	if f.Record.ID == 0 {
		return fmt.Errorf("mysql store: log event %s has no row id", f.Record.Event.ID)
	}
	status := "pending"
	if f.Dead {
		status = "dead"
	}
	msg := sqlbuild.TrimError(f.Error)
	// The failure joins the row's attempt history as a polling worker's
	// would; attempts is set before it, so it numbers this attempt.
	_, err := tx.ExecContext(ctx, "UPDATE "+table+` SET status = ?, lease_owner = ?,
  attempts = attempts + IF(?, 1, 0),
  last_error = IF(? = '', last_error, ?),
  attempt_errors = IF(? = '', attempt_errors, `+mysql.AttemptErrorAppended("?")+`),
  available_at = CASE WHEN ? = 'dead' THEN UTC_TIMESTAMP(6) WHEN ? THEN UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND ELSE available_at END
WHERE id = ? AND status = 'pending'`, status, owner, f.Attempted, msg, msg, msg, msg, status, f.Attempted, sqlbuild.Micros(f.RetryIn), f.Record.ID)
	return err
}

// journalMarks writes a recorded batch's delivered rows into
// herald_log_marks, in the position's transaction: one narrow row instead
// of an update of every outbox row, which ApplyMarks does later in bulk.
func journalMarks(ctx context.Context, tx *sql.Tx, p store.LogParams, ds []store.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	marks := make([][2]any, len(ds))
	for i, d := range ds {
		marks[i] = [2]any{d.ID, d.Receipt.JSON()}
	}
	doc, err := json.Marshal(marks)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO herald_log_marks (lane, table_name, marks) VALUES (?, ?, ?)`, p.Lane, p.Table, string(doc))
	return err
}

// ApplyMarks marks delivered (or deletes, when deleteRows) the rows of up
// to limit journaled batches of the lane and deletes those batches, in one
// transaction; SKIP LOCKED lets several processes apply marks at once. The
// statement reaches each row by its primary key, a locking read that waits
// for a transaction still committing (InnoDB commits after the binary log
// is written) instead of skipping its rows; rows it did not settle are
// counted as settled another way or gone (countMissed).
func (s *Store) ApplyMarks(ctx context.Context, table, lane string, limit int, deleteRows bool) (store.MarksApplied, error) {
	if s.Mapped(table) != nil {
		return store.MarksApplied{}, nil // marked as recorded (mapped.go)
	}
	return s.logs.ApplyMarks(ctx, table, lane, func(ctx context.Context, tx *sql.Tx, q string) (store.MarksApplied, error) {
		return applyMarks(ctx, tx, &s.images, q, table, lane, limit, deleteRows)
	})
}

// applyMarks is ApplyMarks' transaction: it takes the journal rows,
// settles their rows, counts the others and deletes the journal rows.
func applyMarks(ctx context.Context, tx *sql.Tx, ri *rowImages, q, table, lane string, limit int, deleteRows bool) (store.MarksApplied, error) {
	var res store.MarksApplied
	ids, marks, err := takeMarks(ctx, tx, table, lane, limit)
	if err != nil || len(ids) == 0 {
		return res, err
	}
	res.Batches = len(ids)
	doc, err := json.Marshal(marks)
	if err != nil {
		return res, err
	}
	if res.Marked, err = settleRows(ctx, tx, ri, q, string(doc), deleteRows); err != nil {
		return res, err
	}
	if err := countMissed(ctx, tx, q, marks, deleteRows, &res); err != nil {
		return res, err
	}
	_, err = ri.exec(ctx, tx, "DELETE FROM herald_log_marks WHERE id IN ("+sqlbuild.Marks(len(ids))+")", sqlbuild.Int64Args(ids)...)
	return res, err
}

// marksJSON is the JSON_TABLE over a journal's [id, receipt] pairs.
const marksJSON = `JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', receipt LONGTEXT PATH '$[1]')) d`

// settleRows marks delivered, or deletes, the journaled rows in doc (a
// JSON array of [id, receipt]) that are still pending and not handed over,
// and returns how many (with minimal row images where ri allows).
func settleRows(ctx context.Context, tx *sql.Tx, ri *rowImages, q, doc string, deleteRows bool) (int, error) {
	var res sql.Result
	var err error
	if deleteRows {
		res, err = ri.exec(ctx, tx, `DELETE t FROM `+q+` t JOIN `+marksJSON+` ON t.id = d.id
WHERE t.status = 'pending' AND t.lease_owner = ''`, doc)
	} else {
		res, err = ri.exec(ctx, tx, `UPDATE `+q+` t JOIN `+marksJSON+`
  ON t.id = d.id
SET t.status = 'delivered', t.available_at = UTC_TIMESTAMP(6),
  t.receipt_padded = CONCAT(d.receipt, REPEAT(' ', GREATEST(0, ? - LENGTH(d.receipt))))
WHERE t.status = 'pending' AND t.lease_owner = ''`, doc, mysql.ReceiptWidth)
	}
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// countMissed counts the journaled rows settleRows did not settle: rows in
// the table (in another state: handed over, delivered, dead) as settled,
// the others as gone. Nothing to do when it settled them all.
func countMissed(ctx context.Context, tx *sql.Tx, q string, marks []mark, deleteRows bool, res *store.MarksApplied) error {
	ids := distinctIDs(marks)
	if res.Marked >= len(ids) {
		return nil
	}
	var present int
	err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+q+" WHERE id IN ("+sqlbuild.Marks(len(ids))+")",
		sqlbuild.Int64Args(ids)...).Scan(&present)
	if err != nil {
		return err
	}
	// This transaction's own changes are visible here: marked rows are
	// present, deleted ones are not.
	if deleteRows {
		res.Settled, res.Gone = present, len(ids)-res.Marked-present
	} else {
		res.Settled, res.Gone = present-res.Marked, len(ids)-present
	}
	return nil
}

// mark is one journaled row: [id, receipt].
type mark [2]json.RawMessage

// distinctIDs is the row ids of marks, each once.
func distinctIDs(marks []mark) []int64 {
	seen := map[int64]bool{}
	var ids []int64
	for _, m := range marks {
		var id int64
		if json.Unmarshal(m[0], &id) == nil && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// takeMarks locks up to limit journal rows of lane's rows in table and
// returns their ids and their marks (a journal row of another table names
// rows of that table).
func takeMarks(ctx context.Context, tx *sql.Tx, table, lane string, limit int) ([]int64, []mark, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, marks FROM herald_log_marks WHERE lane = ? AND table_name = ? ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`,
		lane, table, limit)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var ids []int64
	var all []mark
	for rows.Next() {
		var id int64
		var doc string
		if err := rows.Scan(&id, &doc); err != nil {
			return nil, nil, err
		}
		var batch []mark
		if err := json.Unmarshal([]byte(doc), &batch); err != nil {
			return nil, nil, fmt.Errorf("journal row %d: %w", id, err)
		}
		ids, all = append(ids, id), append(all, batch...)
	}
	return ids, all, rows.Err()
}

// HandedOverKeys lists the keys of scope with unfinished handed-over rows.
func (s *Store) HandedOverKeys(ctx context.Context, lane string, sc store.Scope, parkOnDead bool) ([][2]string, error) {
	if s.Mapped(sc.Table) != nil {
		return nil, nil // a mapped lane is not ordered by key
	}
	return s.logs.HandedOverKeys(ctx, lane, sc, parkOnDead)
}
