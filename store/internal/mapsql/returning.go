package mapsql

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// Where UPDATE … RETURNING works (PostgreSQL, Dialect.Returning), a claim
// is one statement: a locking read of each status value's due rows (FOR
// UPDATE SKIP LOCKED, the same locks as the read-then-UPDATE claim, so an
// old worker claiming that way still takes disjoint rows), the lease on
// the rows read, and the rows returned. A batch mark is one fenced UPDATE
// that returns the rows it changed, which are the ones still held: no
// second read after a lost lease. Each runs in autocommit, in one round
// trip, where the claim took four or five (BEGIN, a read per status value,
// the UPDATE, COMMIT).
//
// Both carry Dialect.NoSync, which lets their own transaction commit
// without waiting for its WAL flush, as Herald's own claims and marks do
// (store/postgres, asyncCommit): a database crash can lose a claim (the
// rows are claimed again when the lease ends) or a mark (the rows come
// back in flight and are published again), duplicates that consumers
// dedupe by event id, never an event. The service's own writes are
// untouched. Measured on the 2-core machine, a WAL flush took 3–6 ms:
// two per batch, more than the rest of the batch's statements.

// Statement names the returning claim gives its own values, apart from the
// table's columns.
const (
	pickedID  = "herald_pick_id"
	pickedDue = "herald_pick_due"
	noSyncCol = "herald_no_sync"
)

// claimReturning leases up to p.Limit rows of the status values in order,
// each read in its due order, in one statement.
func (t *Table) claimReturning(ctx context.Context, p store.ClaimParams, order []string) ([]store.Record, error) {
	q, args := t.claimStatement(p, order)
	var recs []store.Record
	err := t.ts.autocommit(ctx, func(r Runner) error {
		rows, err := r.QueryContext(ctx, t.rebind(q), args...)
		if err == nil {
			recs, _, err = t.scanRecords(rows)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for i := range recs {
		recs[i].LeaseOwner = p.Owner
		recs[i].AvailableAt = time.Now().Add(p.Lease)
	}
	return recs, nil
}

// claimStatement is claimReturning's statement: a CTE per status value
// (PostgreSQL runs a locking CTE no further than the rows the UNION ALL
// takes from it, so a later value is read only when the earlier left
// room), then the UPDATE of what they picked.
func (t *Table) claimStatement(p store.ClaimParams, order []string) (string, []any) {
	c := t.c
	var with, union []string
	var args []any
	for i, status := range order {
		due := t.dueColumn(status)
		scope, scopeArgs := sqlbuild.ScopeWhereColumns(p.Scope, c.Tenant, c.Type)
		name := "herald_due_" + strconv.Itoa(i)
		with = append(with, name+" AS (SELECT "+c.ID+" AS "+pickedID+", "+t.millis(due)+" AS "+pickedDue+" FROM "+t.quoted+
			" WHERE "+c.Status+" = ? AND "+due+" <= "+t.now()+scope+" ORDER BY "+due+" LIMIT ?"+t.ts.d.Lock+")")
		union = append(union, "SELECT * FROM "+name)
		args = append(append(append(args, status), scopeArgs...), p.Limit)
	}
	with = append(with, "herald_picked AS ("+strings.Join(union, " UNION ALL ")+" LIMIT ?)")
	args = append(args, p.Limit)
	from := " FROM herald_picked"
	if ns := t.ts.d.NoSync; ns != "" {
		with = append([]string{"herald_cfg AS (SELECT " + ns + " AS " + noSyncCol + ")"}, with...)
		from += ", herald_cfg"
	}
	set, setArgs := t.leaseSet(p)
	// The ids as an array as well as the join: the array is an index
	// condition on the id column, so the table's side reads the picked rows
	// only. With the join alone, on an analyzed table of some tens of
	// thousands of rows, the planner hashed the whole table (a sequential
	// scan per claim) for a batch of 1,000.
	q := "WITH " + strings.Join(with, ",\n") + "\nUPDATE " + t.quoted + " SET " + set + from + " WHERE " + c.ID +
		" = ANY (ARRAY(SELECT " + pickedID + " FROM herald_picked)) AND " + c.ID + " = " + pickedID +
		" RETURNING " + t.recordColumnsDue(pickedDue)
	return q, append(args, setArgs...)
}

// ClaimStatement is the statement, in the database's placeholders, and
// its arguments that a claim of p runs on a database that returns what an
// UPDATE changed (Dialect.Returning), reading every pending value then
// the in-flight one: for EXPLAIN, in tests and by hand.
func (t *Table) ClaimStatement(p store.ClaimParams) (string, []any) {
	q, args := t.claimStatement(p, append(slices.Clone(t.m.Statuses.Pending), t.m.Statuses.InFlight))
	return t.rebind(q), args
}

// leaseSet is the lease's SET clause and its arguments: in flight under
// p's owner and token, until now plus the lease.
func (t *Table) leaseSet(p store.ClaimParams) (string, []any) {
	c := t.c
	set := c.Status + " = ?, " + c.LeaseOwner + " = ?, " + c.LeaseUntil + " = " + t.later()
	args := []any{t.m.Statuses.InFlight, t.owner(p.Owner, p.Token), p.Lease.Milliseconds()}
	if c.Fence != "" {
		set += ", " + c.Fence + " = ?"
		args = append(args, p.Token)
	}
	return set, args
}

// markReturning changes (or, set nil, deletes) the held rows in one fenced
// statement that returns the ids it changed: those are the rows still held.
func (t *Table) markReturning(ctx context.Context, rows []claimedRow, held []int, f store.Fence, set *set) ([]bool, error) {
	q, args := t.returningMark(rows, held, f, set)
	var found map[string]bool
	err := t.ts.autocommit(ctx, func(r Runner) (err error) {
		found, err = t.queryIDs(ctx, r, q, args)
		return err
	})
	if err != nil {
		return nil, err
	}
	kept := make([]bool, len(held))
	for j, i := range held {
		kept[j] = found[rows[i].eventID]
	}
	return kept, nil
}

// returningMark is markReturning's statement and its arguments.
func (t *Table) returningMark(rows []claimedRow, held []int, f store.Fence, set *set) (string, []any) {
	where, args := t.fence(f, rows, held)
	head, from := "DELETE FROM "+t.quoted, " USING herald_cfg"
	if set != nil {
		clause, sargs := set.clause(held[0])
		head, from, args = "UPDATE "+t.quoted+" SET "+clause, " FROM herald_cfg", append(sargs, args...)
	}
	if ns := t.ts.d.NoSync; ns != "" {
		return "WITH herald_cfg AS (SELECT " + ns + " AS " + noSyncCol + ") " + head + from + where + " RETURNING " + t.c.ID, args
	}
	return head + where + " RETURNING " + t.c.ID, args
}
