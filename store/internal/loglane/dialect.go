package loglane

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

// Owner is the lease_owner a log lane writes on the rows it hands over to
// its polling workers (store.ClaimParams.HandedOver).
func Owner(lane string) string { return "log:" + lane }

// StrayError is the last_error a stray row gets when it is handed over
// (LogReader.Strays): an operator who finds it knows where it came from.
const StrayError = "stranded: the log lane passed this row without settling it; handed to the lane's polling workers"

// Execer is a pool or a transaction.
type Execer interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}

// Dialect is one database's pieces of the log lanes' bookkeeping that the
// two readers write alike: the herald_log_lanes and herald_log_marks tables
// and the outbox rows they hand over. Its methods are parts of
// store.LogReader; what a database writes its own way (the lease, the
// journal, the marks' SQL) stays in its package.
type Dialect struct {
	// Name prefixes errors ("postgres store").
	Name string
	DB   *sql.DB
	// Bind turns ? placeholders into the driver's; nil keeps them.
	Bind func(string) string
	// Now is the database clock in SQL, as herald_log_lanes keeps it.
	Now string
	// Schema is the SQL for the schema Herald's tables are in.
	Schema string
	// Quote validates and quotes an outbox table.
	Quote func(table string) (string, error)
	// InTx runs f in a READ COMMITTED transaction, retried on conflicts.
	InTx func(ctx context.Context, f func(tx *sql.Tx) error) error
	// Exec runs one write statement and returns the rows it changed.
	Exec func(ctx context.Context, q string, args ...any) (int64, error)
}

func (d *Dialect) bind(q string) string {
	if d.Bind == nil {
		return q
	}
	return d.Bind(q)
}

// HandOver is store.LogReader.HandOver over one database's update of a
// row (one): fs in one transaction, each handed to the lane's polling
// workers.
func (d *Dialect) HandOver(ctx context.Context, table, lane string, fs []store.LogFailure,
	one func(ctx context.Context, tx *sql.Tx, table, owner string, f store.LogFailure) error) error {
	if len(fs) == 0 {
		return nil
	}
	q, err := d.Quote(table)
	if err != nil {
		return err
	}
	return d.InTx(ctx, func(tx *sql.Tx) error {
		for _, f := range fs {
			if err := one(ctx, tx, q, Owner(lane), f); err != nil {
				return err
			}
		}
		return nil
	})
}

// ApplyMarks is store.LogReader.ApplyMarks over one database's statements
// (apply), run in one transaction, retried whole on a conflict.
func (d *Dialect) ApplyMarks(ctx context.Context, table, lane string,
	apply func(ctx context.Context, tx *sql.Tx, table string) (store.MarksApplied, error)) (store.MarksApplied, error) {
	q, err := d.Quote(table)
	if err != nil {
		return store.MarksApplied{}, err
	}
	var res store.MarksApplied
	err = d.InTx(ctx, func(tx *sql.Tx) (err error) {
		res, err = apply(ctx, tx, q)
		return err
	})
	if err != nil {
		return store.MarksApplied{}, fmt.Errorf("%s: marking log events of lane %s delivered: %w", d.Name, lane, err)
	}
	return res, nil
}

// HandedOverKeys is store.LogReader.HandedOverKeys: the keys of sc with
// unfinished handed-over rows.
func (d *Dialect) HandedOverKeys(ctx context.Context, _ string, sc store.Scope, parkOnDead bool) ([][2]string, error) {
	table, err := d.Quote(sc.Table)
	if err != nil {
		return nil, err
	}
	statuses := "'pending', 'in_flight'"
	if parkOnDead {
		statuses += ", 'dead'"
	}
	scope, args := sqlbuild.ScopeWhere(sc, "")
	rows, err := d.DB.QueryContext(ctx, d.bind("SELECT DISTINCT tenant, partition_key FROM "+table+
		" WHERE partition_key <> '' AND lease_owner <> '' AND status IN ("+statuses+")"+scope), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: handed-over keys of %s: %w", d.Name, sc.Table, err)
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

// HandOverBacklog gives the lane's polling workers every pending row of
// the lane's scope that no one owns: the rows committed before the lane's
// first position, which its stream cannot read. Rows committed after it
// are streamed too (published twice, deduped by event id); none is left
// out. table is quoted.
func (d *Dialect) HandOverBacklog(ctx context.Context, p store.LogParams, table string) (int64, error) {
	scope, args := sqlbuild.ScopeWhere(p.Scope, "")
	q := "UPDATE " + table + " SET lease_owner = ? WHERE status = 'pending' AND lease_owner = ''" + scope
	return d.Exec(ctx, d.bind(q), append([]any{Owner(p.Lane)}, args...)...)
}

// ReleaseLease gives the lane's lease up, if p.Owner holds it, so that a
// standby need not wait for it to end.
func (d *Dialect) ReleaseLease(ctx context.Context, p store.LogParams) {
	_, _ = d.DB.ExecContext(ctx, d.bind("UPDATE herald_log_lanes SET owner = '', lease_until = "+d.Now+
		" WHERE lane = ? AND owner = ?"), p.Lane, p.Owner)
}

// Strays is store.LogReader.Strays over one database's hand-over of
// stranded rows (handOver: the rows of ids still pending, without an owner
// and in no journaled batch, given to the lane's polling workers; table is
// quoted) and its log's end now (logEnd). It checks the probe once the
// lane's position reached the probe's end, then samples anew.
func (d *Dialect) Strays(ctx context.Context, lane string, sc store.Scope, probe store.StrayProbe, limit int,
	handOver func(ctx context.Context, table, lane string, ids []int64) ([]int64, error),
	logEnd func(ctx context.Context) (uint64, error)) (store.StrayProbe, []int64, error) {
	q, err := d.Quote(sc.Table)
	if err != nil {
		return probe, nil, err
	}
	var handed []int64
	if len(probe.IDs) > 0 {
		reached, err := d.positionReached(ctx, lane, probe.LogEnd)
		if err != nil || !reached {
			return probe, nil, d.strayError(lane, err)
		}
		if handed, err = handOver(ctx, q, lane, probe.IDs); err != nil {
			return probe, nil, d.strayError(lane, err)
		}
	}
	next, err := d.sampleStrays(ctx, q, sc, limit, logEnd)
	if err != nil {
		return store.StrayProbe{}, handed, d.strayError(lane, err)
	}
	return next, handed, nil
}

func (d *Dialect) strayError(lane string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: looking for stranded rows of lane %s: %w", d.Name, lane, err)
}

// positionReached reports whether lane's recorded position is at or past
// end (false before the lane has a position).
func (d *Dialect) positionReached(ctx context.Context, lane string, end uint64) (bool, error) {
	var reached bool
	err := d.DB.QueryRowContext(ctx, d.bind(`SELECT position >= ? FROM herald_log_lanes WHERE lane = ?`), int64(end), lane).
		Scan(&reached)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return reached, err
}

// sampleStrays reads up to limit pending rows of sc without an owner,
// oldest first, then the log's end: a row visible at the sample was
// committed before that end.
func (d *Dialect) sampleStrays(ctx context.Context, table string, sc store.Scope, limit int,
	logEnd func(ctx context.Context) (uint64, error)) (store.StrayProbe, error) {
	scope, args := sqlbuild.ScopeWhere(sc, "")
	rows, err := d.DB.QueryContext(ctx, d.bind("SELECT id FROM "+table+" WHERE status = 'pending' AND lease_owner = ''"+
		scope+" ORDER BY id LIMIT ?"), append(args, limit)...)
	if err != nil {
		return store.StrayProbe{}, err
	}
	ids, err := sqlscan.ReadIDs(rows)
	rows.Close()
	if err != nil || len(ids) == 0 {
		return store.StrayProbe{}, err
	}
	end, err := logEnd(ctx)
	if err != nil {
		return store.StrayProbe{}, err
	}
	return store.StrayProbe{IDs: ids, LogEnd: end}, nil
}
