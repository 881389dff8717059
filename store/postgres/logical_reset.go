package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/loglane"
)

// ResetLog applies the lane's journaled marks, drops its slot and deletes
// its position and journal, in one transaction (store.LogReader.ResetLog).
// The lane's publication stays: it belongs to the table, which other lanes
// may read, and the next start uses it again.
func (s *Store) ResetLog(ctx context.Context, lane string, deleteRows bool) (store.LogReset, error) {
	return s.logs.Reset(ctx, lane, func(ctx context.Context, tx *sql.Tx, table, lane string) (store.MarksApplied, error) {
		if s.mapped.Get(table) != nil {
			return store.MarksApplied{}, nil // marked as recorded (logical_mapped.go)
		}
		q, err := quote(table)
		if err != nil {
			return store.MarksApplied{}, err
		}
		res, missed, err := applyJournal(ctx, tx, q, table, lane, loglane.ResetBatches, deleteRows)
		if err != nil || len(missed) == 0 {
			return res, err
		}
		return res, settleMissed(ctx, tx, q, missed, deleteRows, &res)
	}, dropSlot)
}

// dropSlot drops the lane's replication slot, if it still exists. A slot
// a reader still streams from (one whose lease ended while it ran) cannot
// be dropped: that is ErrLogLeaseHeld too.
func dropSlot(ctx context.Context, tx *sql.Tx, lane string) ([]string, error) {
	var slot string
	err := tx.QueryRowContext(ctx, "SELECT slot FROM herald_log_lanes WHERE lane = $1", lane).Scan(&slot)
	if err != nil {
		return nil, err
	}
	var dropped int
	err = tx.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT pg_drop_replication_slot(slot_name)
  FROM pg_replication_slots WHERE slot_name = $1) d`, slot).Scan(&dropped)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55006" { // object_in_use
		return nil, fmt.Errorf("%w: %s; stop the lane's relays", store.ErrLogLeaseHeld, pe.Message)
	}
	if err != nil || dropped == 0 {
		return nil, err
	}
	return []string{"slot " + slot}, nil
}
