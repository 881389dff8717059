package loglane

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/store"
)

// ResetBatches is how many journaled batches one step of a reset's
// ApplyMarks takes; steps repeat until the journal is empty.
const ResetBatches = 64

// MarkStep applies up to ResetBatches of lane's journaled batches for
// table (q: quoted) in tx, with the database's own ApplyMarks statements.
type MarkStep func(ctx context.Context, tx *sql.Tx, q, table, lane string) (store.MarksApplied, error)

// Release gives up what the database keeps of lane's place in the log, in
// tx, and names it (PostgreSQL drops the slot); nil where it keeps nothing.
type Release func(ctx context.Context, tx *sql.Tx, lane string) ([]string, error)

// Reset is store.LogReader.ResetLog over one database's mark statements
// (step) and its release of the lane's place in the log. It runs in one
// transaction that holds the lane's position row locked, so that a reader
// taking or renewing the lease waits for it and then finds no position
// (its lease lost, or a first start). A lease still held refuses the
// reset before anything changes.
func (d *Dialect) Reset(ctx context.Context, lane string, step MarkStep, release Release) (store.LogReset, error) {
	var res store.LogReset
	err := d.InTx(ctx, func(tx *sql.Tx) error {
		res = store.LogReset{}
		if err := d.lockUnheld(ctx, tx, lane, &res); err != nil {
			return err
		}
		if err := d.applyAll(ctx, tx, lane, step, &res); err != nil {
			return err
		}
		if release != nil && res.Recorded {
			released, err := release(ctx, tx, lane)
			if err != nil {
				return err
			}
			res.Released = released
		}
		for _, q := range []string{"DELETE FROM herald_log_marks WHERE lane = ?", "DELETE FROM herald_log_lanes WHERE lane = ?"} {
			if _, err := tx.ExecContext(ctx, d.bind(q), lane); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.LogReset{}, fmt.Errorf("%s: resetting log lane %s: %w", d.Name, lane, err)
	}
	return res, nil
}

// lockUnheld locks lane's position row and fails with ErrLogLeaseHeld
// while a reader holds its lease. A lane without a row has nothing
// recorded.
func (d *Dialect) lockUnheld(ctx context.Context, tx *sql.Tx, lane string, res *store.LogReset) error {
	var owner string
	var held bool
	err := tx.QueryRowContext(ctx, d.bind("SELECT table_name, owner, owner <> '' AND lease_until > "+d.Now+
		" FROM herald_log_lanes WHERE lane = ? FOR UPDATE"), lane).Scan(&res.Table, &owner, &held)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if held {
		return fmt.Errorf("%w: reader %q holds it; stop the lane's relays (or wait for the lease to end after a crash)",
			store.ErrLogLeaseHeld, owner)
	}
	res.Recorded = true
	return nil
}

// applyAll applies every journaled batch of lane, for each table its
// journal names (the recorded one, and any other the lane read before its
// table was renamed in the config), until none is left.
func (d *Dialect) applyAll(ctx context.Context, tx *sql.Tx, lane string, step MarkStep, res *store.LogReset) error {
	tables, err := d.journalTables(ctx, tx, lane)
	if err != nil {
		return err
	}
	for _, table := range tables {
		q, err := d.Quote(table)
		if err != nil {
			return err
		}
		for {
			got, err := step(ctx, tx, q, table, lane)
			if err != nil {
				return fmt.Errorf("applying its marks to %s: %w", table, err)
			}
			res.Marks.Batches += got.Batches
			res.Marks.Marked += got.Marked
			res.Marks.Settled += got.Settled
			res.Marks.Gone += got.Gone
			if got.Batches == 0 {
				break
			}
		}
	}
	return nil
}

// journalTables lists the tables lane's journal names that exist: the
// journal of a table dropped outside Herald marks nothing (the reset
// deletes it).
func (d *Dialect) journalTables(ctx context.Context, tx *sql.Tx, lane string) ([]string, error) {
	rows, err := tx.QueryContext(ctx, d.bind("SELECT DISTINCT m.table_name FROM herald_log_marks m JOIN information_schema.tables t ON t.table_name = m.table_name AND t.table_schema = "+
		d.Schema+" WHERE m.lane = ?"), lane)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	return tables, rows.Err()
}
