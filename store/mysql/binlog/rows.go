package binlog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlcommon"
	"github.com/heraldhq/herald/store/mysql"
)

// retryable reports a lost deadlock (1213) or a lock wait timeout (1205).
func retryable(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// inTx runs f in a READ COMMITTED transaction, retrying deadlocks.
func (s *Store) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	return sqlcommon.InTx(ctx, s.DB(), retryable, f)
}

// HandOver writes failed (or parked) log events to their rows for the
// lane's polling workers, in one transaction.
func (s *Store) HandOver(ctx context.Context, table, lane string, fs []store.LogFailure) error {
	if len(fs) == 0 {
		return nil
	}
	q, err := quote(table)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, f := range fs {
			if err := handOverOne(ctx, tx, q, LogOwner(lane), f); err != nil {
				return err
			}
		}
		return nil
	})
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
	msg := sqlcommon.TrimError(f.Error)
	_, err := tx.ExecContext(ctx, "UPDATE "+table+` SET status = ?, lease_owner = ?,
  attempts = attempts + IF(?, 1, 0),
  last_error = IF(? = '', last_error, ?),
  available_at = CASE WHEN ? = 'dead' THEN UTC_TIMESTAMP(6) WHEN ? THEN UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND ELSE available_at END
WHERE id = ? AND status = 'pending'`, status, owner, f.Attempted, msg, msg, status, f.Attempted, sqlcommon.Micros(f.RetryIn), f.Record.ID)
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
// transaction; SKIP LOCKED lets several processes apply marks at once. It
// returns how many batches.
func (s *Store) ApplyMarks(ctx context.Context, table, lane string, limit int, deleteRows bool) (int, error) {
	q, err := quote(table)
	if err != nil {
		return 0, err
	}
	var n int
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		ids, doc, err := takeMarks(ctx, tx, lane, limit)
		if err != nil || len(ids) == 0 {
			return err
		}
		n = len(ids)
		if err := settleRows(ctx, tx, q, doc, deleteRows); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "DELETE FROM herald_log_marks WHERE id IN ("+sqlcommon.Marks(len(ids))+")", sqlcommon.Int64Args(ids)...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mysql store: marking log events of lane %s delivered: %w", lane, err)
	}
	return n, nil
}

// settleRows marks delivered, or deletes, the journaled rows in doc (a
// JSON array of [id, receipt]) that are still pending and not handed over.
func settleRows(ctx context.Context, tx *sql.Tx, q, doc string, deleteRows bool) error {
	marks := `JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$[0]', receipt LONGTEXT PATH '$[1]')) d`
	if deleteRows {
		_, err := tx.ExecContext(ctx, `DELETE t FROM `+q+` t JOIN `+marks+` ON t.id = d.id
WHERE t.status = 'pending' AND t.lease_owner = ''`, doc)
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE `+q+` t JOIN `+marks+`
  ON t.id = d.id
SET t.status = 'delivered', t.available_at = UTC_TIMESTAMP(6),
  t.receipt_padded = CONCAT(d.receipt, REPEAT(' ', GREATEST(0, ? - LENGTH(d.receipt))))
WHERE t.status = 'pending' AND t.lease_owner = ''`, doc, mysql.ReceiptWidth)
	return err
}

// takeMarks locks up to limit journal rows of lane and returns their ids
// and their marks as one JSON array.
func takeMarks(ctx context.Context, tx *sql.Tx, lane string, limit int) ([]int64, string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, marks FROM herald_log_marks WHERE lane = ? ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`, lane, limit)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var ids []int64
	var all []json.RawMessage
	for rows.Next() {
		var id int64
		var marks string
		if err := rows.Scan(&id, &marks); err != nil {
			return nil, "", err
		}
		var batch []json.RawMessage
		if err := json.Unmarshal([]byte(marks), &batch); err != nil {
			return nil, "", fmt.Errorf("journal row %d: %w", id, err)
		}
		ids, all = append(ids, id), append(all, batch...)
	}
	doc, err := json.Marshal(all)
	return ids, string(doc), errors.Join(err, rows.Err())
}

// HandedOverKeys lists the keys of scope with unfinished handed-over rows.
func (s *Store) HandedOverKeys(ctx context.Context, lane string, sc store.Scope, parkOnDead bool) ([][2]string, error) {
	table, err := quote(sc.Table)
	if err != nil {
		return nil, err
	}
	statuses := "'pending', 'in_flight'"
	if parkOnDead {
		statuses += ", 'dead'"
	}
	scope, args := sqlcommon.ScopeWhere(sc, "")
	rows, err := s.DB().QueryContext(ctx, "SELECT DISTINCT tenant, partition_key FROM "+table+
		" WHERE partition_key <> '' AND lease_owner <> '' AND status IN ("+statuses+")"+scope, args...)
	if err != nil {
		return nil, fmt.Errorf("mysql store: handed-over keys of %s: %w", sc.Table, err)
	}
	defer rows.Close()
	var keys [][2]string
	for rows.Next() {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}
