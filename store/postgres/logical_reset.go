package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/loglane"
)

// ResetLog applies the lane's journaled marks, drops its slot and deletes
// its position and journal, in one transaction (store.LogReader.ResetLog).
// The lane's publication stays: it belongs to the table, which other lanes
// may read, and the next start uses it again.
func (s *Store) ResetLog(ctx context.Context, lane string, deleteRows bool) (store.LogReset, error) {
	return s.logs.Reset(ctx, lane, func(ctx context.Context, tx *sql.Tx, q, table, lane string) (store.MarksApplied, error) {
		if s.mapped.Get(table) != nil {
			return store.MarksApplied{}, nil // marked as recorded (logical_mapped.go)
		}
		return settleJournal(ctx, tx, q, table, lane, loglane.ResetBatches, deleteRows)
	}, dropSlot)
}

// dropSlot drops the lane's replication slot, if it still exists. A reader
// that just stopped may hold its slot a moment longer (its walsender ends
// after its connection), so a slot in use is waited for, up to
// slotReleaseWait; one still in use then (a reader whose lease ended while
// it went on streaming) is ErrLogLeaseHeld too.
func dropSlot(ctx context.Context, tx *sql.Tx, lane string) ([]string, error) {
	var slot string
	if err := tx.QueryRowContext(ctx, "SELECT slot FROM herald_log_lanes WHERE lane = $1", lane).Scan(&slot); err != nil {
		return nil, err
	}
	exists, err := awaitSlotFree(ctx, tx, slot)
	if err != nil || !exists {
		return nil, err
	}
	_, err = tx.ExecContext(ctx, "SELECT pg_drop_replication_slot($1)", slot)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55006" { // object_in_use: taken again since the look
		return nil, fmt.Errorf("%w: %s; stop the lane's relays", store.ErrLogLeaseHeld, pe.Message)
	}
	if err != nil {
		return nil, err
	}
	return []string{"slot " + slot}, nil
}

// slotReleaseWait is how long dropSlot waits for a slot in use.
const slotReleaseWait = 5 * time.Second

// awaitSlotFree waits until slot is not in use and says whether it exists.
// pg_replication_slots shows the slots' state now, not the transaction's
// snapshot, so each look sees the latest.
func awaitSlotFree(ctx context.Context, tx *sql.Tx, slot string) (bool, error) {
	deadline := time.Now().Add(slotReleaseWait)
	for {
		var pid sql.NullInt64
		err := tx.QueryRowContext(ctx, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&pid)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return false, nil
		case err != nil:
			return false, err
		case !pid.Valid:
			return true, nil
		case time.Now().After(deadline):
			return false, fmt.Errorf("%w: replication slot %q is active for PID %d; stop the lane's relays",
				store.ErrLogLeaseHeld, slot, pid.Int64)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
