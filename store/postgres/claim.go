package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/claimrule"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlscan"
	"github.com/heraldhq/herald/store/internal/sqltx"
)

// ErrBadClaim is returned for claim parameters that cannot work.
var ErrBadClaim = errors.New("postgres store: bad claim parameters")

// Claim leases up to p.Limit claimable rows in one short READ COMMITTED
// transaction. Unordered lanes take one statement: lock candidates with FOR
// UPDATE SKIP LOCKED, mark them in flight, return them. Ordered lanes lock
// candidates first, drop those with an earlier unfinished row of their key
// outside the batch (a plain read: rows other workers hold locked still
// count), then mark the rest. Rows come back in id order.
//
// Expired leases and due pending rows are found by two index ranges, each
// "status = ? AND available_at <= now() ORDER BY available_at, id", which
// the (status, available_at, id) index serves without a sort.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) ([]store.Record, error) {
	if t := s.mapped.Get(p.Table); t != nil {
		return t.Claim(ctx, p)
	}
	table, err := quote(p.Table)
	if err != nil {
		return nil, err
	}
	if err := claimrule.CheckClaim(p, ErrBadClaim); err != nil {
		return nil, err
	}
	var recs []store.Record
	bound := boundArg(s.bound.Note(p.Lease))
	if p.Ordered {
		recs, err = s.claimOrderedTx(ctx, table, p, bound)
	} else {
		recs, err = s.claimUnordered(ctx, table, p, bound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres store: claim from %s: %w", p.Table, err)
	}
	slices.SortFunc(recs, func(a, b store.Record) int { return cmp.Compare(a.ID, b.ID) })
	return recs, nil
}

// claimUnordered claims an unordered batch with its one statement (in one
// round trip on pgx's pool, see oneTrip). There its transaction has
// committed when the rows are read, so the test hook PauseInClaim freezes
// a relay that holds the rows by their lease alone.
func (s *Store) claimUnordered(ctx context.Context, table string, p store.ClaimParams, bound string) ([]store.Record, error) {
	q, args := unorderedClaim(table, p)
	var recs []store.Record
	err := s.statementTx(ctx, s.claimSettings(), bound, q, args, func(rows sqlscan.Cursor) (err error) {
		recs, err = sqlscan.ReadRecords(rows, true)
		if err == nil && len(recs) > 0 {
			sqltx.PauseInClaim(ctx)
		}
		return err
	})
	return recs, err
}

// claimOrderedTx claims for an ordered lane, a statement at a time: its
// claim reads candidates, drops those its keys' order holds back, then
// marks the rest.
func (s *Store) claimOrderedTx(ctx context.Context, table string, p store.ClaimParams, bound string) ([]store.Record, error) {
	var recs []store.Record
	err := s.inTx(ctx, func(tx *sql.Tx) (err error) {
		if _, err := tx.ExecContext(ctx, s.claimSettings(), bound); err != nil {
			return err
		}
		recs, err = claimOrdered(ctx, tx, table, p)
		if err == nil && len(recs) > 0 {
			sqltx.PauseInClaim(ctx)
		}
		return err
	})
	return recs, err
}

// planSettings pins the claim's plan for its transaction (is_local: true),
// PostgreSQL's way of giving a hint. A queue table fills faster than
// autovacuum analyzes it; on a freshly filled table the planner expects a
// handful of rows, and for an ordered claim it then fetched every ready row,
// ran the order pre-filter on each and sorted them: 955 ms for 5000 rows,
// against 0.9 ms walking the ordered_claim index in order and stopping at
// the LIMIT, which is the plan these settings leave it. JIT is off because
// the ordered claim's cost estimate passes jit_above_cost, and compiling it
// took longer (30 ms and more) than running it. Hash and merge joins are off
// so that the UPDATE finds the picked rows (at most the batch) by primary
// key: with statistics on a table of a few tens of thousands of rows the
// planner chose a Hash Join over the whole primary key instead, reading
// every row of the table for each claim (270 ms against 146 ms for 1000 of
// 20,000 rows, and growing with the table; TestClaimPlans). The claim commits without
// waiting for its WAL flush (see asyncCommit), and is bounded like every
// claim and mark transaction (see boundSettings); $1 is boundArg's value.
const planSettings = `SELECT set_config('enable_sort', 'off', true), ` + byPrimaryKey + `,
  set_config('jit', 'off', true), ` + noSync + `, ` + boundSettings

// byPrimaryKey leaves a join of a batch's ids to the table one plan: a
// primary-key probe per id (no sequential scan, no hash or merge join over
// the table). The claim's and the mark's settings both pin it.
const byPrimaryKey = `set_config('enable_seqscan', 'off', true),
  set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`

// noSync is asyncCommit's setting, for the settings that include it.
const noSync = `set_config('synchronous_commit', 'off', true)`

// boundSettings ends the session of a claim or mark transaction that sits
// idle longer than $1 ms (idle_in_transaction_session_timeout: a relay
// paused or cut off between its statements), and fails a lock wait that
// long (lock_timeout). Both are local to the transaction, so they cost no
// round trip (they ride on the statement that sets the others) and leave
// the connection as they found it, a caller's pool (New) included. The
// value is sqltx.TxBound of the shortest lease claimed with, under the
// lease: see docs/isolation.md, "A relay frozen inside a transaction".
const boundSettings = `set_config('idle_in_transaction_session_timeout', $1, true), set_config('lock_timeout', $1, true)`

// tcpBound also ends the session when the client has not taken the
// transaction's results for $1 ms: a claim's rows filled the socket buffers
// of a frozen relay, and the backend waits in ClientWrite, which no
// statement or idle timeout covers. tcp_user_timeout does, on servers whose
// OS has TCP_USER_TIMEOUT (Linux, where it also covers a zero window); the
// others log a line each time it is set, so Open adds it on Linux only.
const tcpBound = `, set_config('tcp_user_timeout', $1, true)`

// claimSettings and markSettings are the first statement of a claim and of
// a mark on this store's server.
func (s *Store) claimSettings() string {
	if s.tcpBound {
		return planSettings + tcpBound
	}
	return planSettings
}

func (s *Store) markSettings() string {
	if s.tcpBound {
		return markPlanSettings + tcpBound
	}
	return markPlanSettings
}

// markPlanSettings are a mark's: asynchronous commit and the bounds
// (asyncCommit), and the plan pinned to one primary-key probe per row of
// the batch. With the claim index out of reach (fenceWhere) the planner
// could still read the whole table, by a sequential scan or the primary
// key, into a hash or merge join, the cheaper guess on a table it thinks
// small; that read grows with the table, the probes only with the batch.
const markPlanSettings = `SELECT ` + byPrimaryKey + `, ` + noSync + `, ` + boundSettings

// boundArg is the settings' value for a bound: milliseconds, as text.
func boundArg(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// asyncCommit lets the claim and mark transactions commit without waiting
// for their WAL to reach disk. What a database crash can lose of them is a
// claim (the rows are claimed again when the lease ends) or a mark (the
// rows come back in flight and are published again): duplicates, which
// consumers dedupe by event id, never a lost event. The events themselves
// are enqueued by the application's own transactions, untouched by this.
// It saves a WAL flush per statement: latency and throughput both gain.
// The mark transaction is bounded like the claim's (boundSettings).
const asyncCommit = `SELECT ` + noSync + `, ` + boundSettings

// candidates is a CTE "picked" of up to p.Limit locked claimable rows:
// expired leases first, then due pending rows.
func candidates(table string, p store.ClaimParams, extra string) (string, []any) {
	scope, scopeArgs := sqlbuild.ScopeWhere(p.Scope, "r")
	if p.Tenant != "" {
		// Repeats the tenant_claim index's WHERE (always true here, as
		// the tenant is not empty) so the planner can use that partial
		// index with a generic plan too.
		scope += " AND r.tenant <> ''"
	}
	if p.HandedOver {
		// Fresh rows (no owner yet) belong to the lane's log reader.
		extra += " AND r.lease_owner <> ''"
	}
	branch := func(status string) string {
		order := "r.available_at, r.id"
		if p.Ordered && status == "pending" {
			// By id, off the ordered_claim index: in (available_at, id)
			// order a retried head (due later) would come after its key's
			// later rows, which the order check drops, and a batch could
			// fill up with such rows forever.
			order = "r.id"
		}
		// due_at is the row's available_at before the claim rewrites it
		// to the lease end: the claim returns it (store.Record.DueFor).
		return "SELECT r.id, r.tenant, r.partition_key, r.available_at AS due_at FROM " + table + " r WHERE r.status = '" + status +
			"' AND r.available_at <= now()" + scope + extra + " ORDER BY " + order + " LIMIT ? FOR UPDATE SKIP LOCKED"
	}
	q := "WITH expired AS (" + branch("in_flight") + "), ready AS (" + branch("pending") + `),
picked AS (SELECT * FROM expired UNION ALL SELECT * FROM ready LIMIT ?)`
	var args []any
	args = append(append(args, scopeArgs...), p.Limit)
	args = append(append(args, scopeArgs...), p.Limit)
	return q, append(args, p.Limit)
}

// markSQL marks rows in flight under p's owner and token.
const markSQL = `SET status = 'in_flight', lease_owner = ?, lease_token = ?, attempts = t.attempts + 1,
  available_at = now() + ? * interval '1 microsecond'`

// unorderedClaim is the one statement of an unordered claim.
func unorderedClaim(table string, p store.ClaimParams) (string, []any) {
	cte, args := candidates(table, p, "")
	q := cte + "\nUPDATE " + table + " t " + markSQL + " FROM picked WHERE t.id = picked.id RETURNING " +
		sqlscan.RecordColumns("t") + ", now(), picked.due_at"
	return sqlbuild.Rebind(q), append(args, p.Owner, p.Token, sqlbuild.Micros(p.Lease))
}

func claimOrdered(ctx context.Context, tx *sql.Tx, table string, p store.ClaimParams) ([]store.Record, error) {
	cte, args := candidates(table, p, " AND (r.partition_key = '' OR NOT EXISTS ("+blockedByState(table, p.ParkOnDead)+"))")
	rows, err := tx.QueryContext(ctx, sqlbuild.Rebind(cte+
		" SELECT id, tenant, partition_key, (extract(epoch FROM now() - due_at) * 1000000)::bigint FROM picked"), args...)
	if err != nil {
		return nil, err
	}
	cands, dueFor, err := scanCandidates(rows)
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	kept, err := keepOrdered(ctx, tx, table, p, cands)
	if err != nil || len(kept) == 0 {
		return nil, err
	}
	rows, err = tx.QueryContext(ctx, sqlbuild.Rebind("UPDATE "+table+" t "+markSQL+" WHERE t.id = ANY(?) RETURNING "+
		sqlscan.RecordColumns("t")+", now()"), p.Owner, p.Token, sqlbuild.Micros(p.Lease), kept)
	if err != nil {
		return nil, err
	}
	recs, err := sqlscan.ScanRecords(rows)
	for i := range recs {
		recs[i].DueFor = dueFor[recs[i].ID]
	}
	return recs, err
}

// blockedByState is the ordered lanes' pre-filter: an earlier row of the
// same key (and tenant) that cannot be claimed now (backing off, under a
// live lease, or dead when parking). It reads the statement's snapshot, not
// through SKIP LOCKED, so rows other workers hold locked still count; it is
// not the whole rule (see keepOrdered). Like the rest of the ordering rule it
// ignores the lane's type filters: a key's order holds across the table.
func blockedByState(table string, park bool) string {
	// The partition_key and status IN terms repeat the key_order index's
	// WHERE so that the planner can use that partial index (r's key is
	// not empty wherever this runs).
	cond := "e.status IN ('pending', 'in_flight', 'dead') AND e.status <> 'dead' AND e.available_at > now()"
	if park {
		cond = "e.status IN ('pending', 'in_flight', 'dead') AND (e.status = 'dead' OR e.available_at > now())"
	}
	return "SELECT 1 FROM " + table + ` e WHERE e.partition_key = r.partition_key AND e.partition_key <> '' AND e.tenant = r.tenant
  AND e.id < r.id AND ` + cond
}

// keepOrdered returns the candidates that have no earlier unfinished row of
// their key outside this batch: such a row is claimable but locked by
// another worker (SKIP LOCKED passed over it) or was cut by the limit, and
// the later row must wait for it.
func keepOrdered(ctx context.Context, tx *sql.Tx, table string, p store.ClaimParams, cands []claimrule.Candidate) ([]int64, error) {
	keys, maxID := claimrule.Keys(cands)
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = c.ID
	}
	if len(keys) == 0 {
		return ids, nil
	}
	statuses := []string{"pending", "in_flight"}
	if p.ParkOnDead {
		statuses = append(statuses, "dead")
	}
	rows, err := tx.QueryContext(ctx, sqlbuild.Rebind(`SELECT tenant, partition_key, MIN(id) FROM `+table+`
WHERE partition_key = ANY(?) AND partition_key <> '' AND status IN ('pending', 'in_flight', 'dead') AND status = ANY(?)
  AND id < ? AND NOT (id = ANY(?)) GROUP BY tenant, partition_key`), keys, statuses, maxID, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	blockers := map[string]int64{}
	for rows.Next() {
		var tenant, key string
		var id int64
		if err := rows.Scan(&tenant, &key, &id); err != nil {
			return nil, err
		}
		blockers[claimrule.OrderKey(tenant, key)] = id
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return claimrule.KeepOrdered(cands, blockers), nil
}

// scanCandidates reads the candidates and how long each has been due (in
// microseconds, on the database clock).
func scanCandidates(rows *sql.Rows) ([]claimrule.Candidate, map[int64]time.Duration, error) {
	defer rows.Close()
	var cands []claimrule.Candidate
	dueFor := map[int64]time.Duration{}
	for rows.Next() {
		var c claimrule.Candidate
		var micros int64
		if err := rows.Scan(&c.ID, &c.Tenant, &c.Key, &micros); err != nil {
			return nil, nil, err
		}
		cands = append(cands, c)
		dueFor[c.ID] = max(time.Duration(micros)*time.Microsecond, 0)
	}
	return cands, dueFor, rows.Err()
}
