package mysql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/claimrule"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlscan"
	"github.com/heraldhq/herald/store/internal/sqltx"
)

// ErrBadClaim is returned for claim parameters that cannot work.
var ErrBadClaim = errors.New("mysql store: bad claim parameters")

// Claim leases up to p.Limit claimable rows, in one short READ COMMITTED
// transaction: lock candidates with FOR UPDATE SKIP LOCKED, (for ordered
// lanes) drop those with an earlier unfinished row of their key outside the
// batch, mark the rest in flight, commit. Rows come back in id order.
//
// Expired leases are looked for first (at most every second or so, see
// expiredDue), in their own query: a single "status = ? AND available_at <=
// now ORDER BY available_at, id" range is what lets the (status,
// available_at, id) index serve the ORDER BY without a sort (measured on a
// 2-core machine: "status IN (…) ORDER BY id" claimed MariaDB ~6k events/s
// at batch 100, this shape ~25k: the claim's shape decides throughput 4–6×).
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) ([]store.Record, error) {
	if t := s.mappedTable(p.Table); t != nil {
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
	scopeKey := fmt.Sprint(p.Scope)
	expired := s.expiredDue(p, scopeKey)
	// A background commit pays off for a partial batch: the claim has
	// caught up with the queue and the batch's latency is what counts. A
	// full batch means a backlog, where other claims would have to skip
	// over this one's rows (still pending in the claim index, and locked)
	// until the commit: with three relays of two workers at batch 500 that
	// cost a quarter of the throughput. So full batches commit first.
	async := func() bool { return p.AsyncCommit && len(recs) < p.Limit }
	key := s.cursorKey(p, scopeKey)
	from, fromOK := s.cursor(key)
	var scan pendingScan
	err = s.inClaimTx(ctx, s.bound.Note(p.Lease), async, func(tx txRunner) error {
		scan = pendingScan{}
		if fromOK {
			scan.from = &from
		}
		recs, err = claimTx(ctx, tx, table, p, expired, &scan)
		if err == nil && len(recs) > 0 {
			sqltx.PauseInClaim(ctx)
		}
		return err
	})
	if err != nil {
		err = explainMissingIndex(err, p.Table, store.TableUse{Ordered: p.Ordered, Tenants: p.Tenant != ""})
		return nil, fmt.Errorf("mysql store: claim from %s: %w", p.Table, err)
	}
	s.advanceCursor(key, scan)
	return recs, nil
}

// pendingScan is a claim's read of pending rows: where it starts (nil: at
// the beginning; see claimCursor), where it ended (the last row it took,
// its available_at read before the claim rewrote it) and whether it found
// as many rows as it asked for.
type pendingScan struct {
	from *claimCursor
	last claimCursor
	full bool
}

func claimTx(ctx context.Context, tx txRunner, table string, p store.ClaimParams, expired bool, scan *pendingScan) ([]store.Record, error) {
	var recs []store.Record
	var err error
	if expired {
		if recs, err = lockExpired(ctx, tx, table, p); err != nil {
			return nil, err
		}
	}
	if want := p.Limit - len(recs); want > 0 {
		ready, err := lockPending(ctx, tx, table, p, want, scan.from)
		if err != nil {
			return nil, err
		}
		scan.last = lastOf(ready)
		scan.full = len(ready) > 0 && len(ready) == want
		recs = append(recs, ready...)
	}
	if p.Ordered && len(recs) > 0 {
		if recs, err = keepOrdered(ctx, tx, table, p, recs); err != nil {
			return nil, err
		}
	}
	if len(recs) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(recs))
	for i := range recs {
		ids[i] = recs[i].ID
	}
	// The owner padded to the default's width, so that the claim does not
	// grow the row (schema version 4).
	args := append([]any{padTo(p.Owner, OwnerWidth), p.Token, sqlbuild.Micros(p.Lease)}, sqlbuild.Int64Args(ids)...)
	if _, err := tx.ExecContext(ctx, "UPDATE "+table+` SET status = 'in_flight', lease_owner = ?, lease_token = ?,
  attempts = attempts + 1, available_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
WHERE id IN (`+sqlbuild.Marks(len(ids))+")", args...); err != nil {
		return nil, err
	}
	for i := range recs {
		r := &recs[i]
		r.Status = store.StatusInFlight
		r.Attempts++
		r.LeaseOwner = p.Owner
		// The lease end as the UPDATE computed it, give or take the
		// milliseconds between the two statements.
		r.AvailableAt = r.Event.CreatedAt.Add(r.Age).Add(p.Lease)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	return recs, nil
}

// maxExpiredEvery bounds how long a claim may go without looking for
// expired leases; see expiredDue.
const maxExpiredEvery = time.Second

// expiredDue reports whether this claim should look for expired leases. The
// look costs a range scan of the in-flight part of the claim index, which
// under load is mostly delete-marked entries that purge has not removed yet
// (rows pass through in_flight on every claim): it measured 6 ms of a 16 ms
// claim at batch 100. So a Store looks at most every min(1 s, lease/4) per
// scope, which delays the rescue of a crashed worker's rows by at most that,
// against leases of several seconds. The interval is on the local clock: it
// only paces the look; whether a lease ran out is the database's call.
func (s *Store) expiredDue(p store.ClaimParams, key string) bool {
	every := min(maxExpiredEvery, p.Lease/4)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if next, ok := s.nextExpired[key]; ok && now.Before(next) {
		return false
	}
	if s.nextExpired == nil {
		s.nextExpired = map[string]time.Time{}
	}
	s.nextExpired[key] = now.Add(every)
	return true
}

// lockCandidates locks up to limit claimable rows of one status: pending
// rows that are due, or in-flight rows whose lease ran out.
func lockCandidates(ctx context.Context, tx txRunner, table string, status store.Status, p store.ClaimParams, limit int) ([]store.Record, error) {
	q, args := candidateQuery(table, status, p, limit)
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlscan.ScanClaimed(rows)
}

// lockPending locks up to limit pending rows that are due, in claim index
// order after from when from is set (claimCursor), else from the start.
func lockPending(ctx context.Context, tx txRunner, table string, p store.ClaimParams, limit int, from *claimCursor) ([]store.Record, error) {
	if from == nil {
		return lockCandidates(ctx, tx, table, store.StatusPending, p, limit)
	}
	q, args := pendingAfterQuery(table, p, limit, *from)
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlscan.ScanClaimed(rows)
}

// pendingAfterQuery is candidateQuery for pending rows past the cursor from.
func pendingAfterQuery(table string, p store.ClaimParams, limit int, from claimCursor) (string, []any) {
	ix := claimIndexFor(store.StatusPending, p)
	where, args := candidateWhere(table, ix, p)
	after, afterArgs := from.after()
	q := candidateSelect(table, ix.name) + where + after + " ORDER BY " + ix.order + " LIMIT ?" + lockingSuffix
	return q, append(append(args, afterArgs...), limit)
}

// lockExpired locks up to p.Limit in-flight rows whose lease ran out, in
// two reads: a plain one of the claim index finds their ids, a locking one
// takes them by primary key. A locking range read of the index itself
// would also lock the first entry past the in-flight range (InnoDB locks a
// record before it finds it out of range, and keeps that lock at READ
// COMMITTED): the oldest pending row's entry in the claim index. A claim
// that reads another index (ordered_claim, tenant_claim) may take that row;
// its UPDATE then waits for this transaction while this one's UPDATE waits
// for an entry it holds the same way, and one of the two is rolled back.
// When that one committed in the background (AsyncCommit), its rows were
// already being published: they went out twice (seen under CPU stress in
// about 1 of 200 runs of the ordered concurrency test).
func lockExpired(ctx context.Context, tx txRunner, table string, p store.ClaimParams) ([]store.Record, error) {
	ix := claimIndexFor(store.StatusInFlight, p)
	where, args := candidateWhere(table, ix, p)
	ids, err := queryIDs(ctx, tx, "SELECT r.id FROM "+table+" r FORCE INDEX ("+ix.name+")\nWHERE "+where+
		" ORDER BY "+ix.order+" LIMIT ?", append(slices.Clone(args), p.Limit))
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	// The same conditions again: a lease may have been renewed, or the row
	// marked, since the plain read.
	rows, err := tx.QueryContext(ctx, candidateSelect(table, "PRIMARY")+"r.id IN ("+sqlbuild.Marks(len(ids))+") AND "+
		where+lockingSuffix, append(sqlbuild.Int64Args(ids), args...)...)
	if err != nil {
		return nil, err
	}
	return sqlscan.ScanClaimed(rows)
}

// queryIDs runs q, which reads ids.
func queryIDs(ctx context.Context, tx txRunner, q string, args []any) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlscan.ReadIDs(rows)
}

// lockingSuffix ends every candidate query.
const lockingSuffix = " FOR UPDATE SKIP LOCKED"

// candidateQuery is the locking read of lockCandidates, off the index
// claimIndex names, in that index's order (TestClaimPlans checks).
func candidateQuery(table string, status store.Status, p store.ClaimParams, limit int) (string, []any) {
	ix := claimIndexFor(status, p)
	where, args := candidateWhere(table, ix, p)
	q := candidateSelect(table, ix.name) + where + " ORDER BY " + ix.order + " LIMIT ?" + lockingSuffix
	return q, append(args, limit)
}

// candidateSelect is a candidate query up to its WHERE conditions.
func candidateSelect(table, index string) string {
	// available_at comes twice: the second is read as the time the row
	// became due (sqlscan.ScanClaimed), which the UPDATE then overwrites.
	return "SELECT " + sqlscan.RecordColumns("r") + ", UTC_TIMESTAMP(6), r.available_at FROM " + table + " r FORCE INDEX (" +
		index + ")\nWHERE "
}

// candidateWhere is the condition for rows of ix's status that p may claim.
func candidateWhere(table string, ix readIndex, p store.ClaimParams) (string, []any) {
	scope, args := sqlbuild.ScopeWhere(p.Scope, "r")
	q := ix.due + scope
	args = append(slices.Clone(ix.args), args...)
	if p.HandedOver {
		// A log lane's polling workers: fresh rows (no owner yet) belong to
		// the lane's binlog reader (store/mysql/binlog).
		q += " AND r.lease_owner <> ''"
	}
	if p.Ordered {
		q += " AND (r.partition_key = '' OR NOT EXISTS (" + blockedByState(table, p.ParkOnDead) + "))"
	}
	return q, args
}

// claimIndex names the index a claim of status rows under p reads.
func claimIndex(status store.Status, p store.ClaimParams) string {
	return claimIndexFor(status, p).name
}

// readIndex is an index a claim or peek reads: its name, the condition
// for rows of one status that are due (in the index's own columns) and the
// order it serves.
type readIndex struct {
	name, due, order string
	args             []any
}

// claimIndexFor returns the index a claim of status rows reads, with the
// condition and order it serves. It is forced: an outbox swings between empty and a large backlog faster than
// the optimizer's statistics follow, and the wrong pick means a sort of
// every ready row, or (for the fenced marks) gap locks. tenant_claim and
// ordered_claim are keyed on virtual columns that are NULL for rows they do
// not serve (schema version 2), so their conditions name those columns.
func claimIndexFor(status store.Status, p store.ClaimParams) readIndex {
	switch {
	case p.Ordered && status == store.StatusPending:
		// Ordered lanes take ready rows by id: in (available_at, id) order a
		// retried head (due later) would come after its key's later rows,
		// which the order check then drops, and a batch could fill up with
		// such rows forever. Expired leases are few; they keep the claim
		// index's order.
		return readIndex{name: "ordered_claim", order: "r.id",
			due: "r.ordered_pending = 1 AND r.ordered_available_at <= UTC_TIMESTAMP(6)"}
	case p.Tenant != "":
		return readIndex{name: "tenant_claim", order: "r.tenant_available_at, r.id", args: []any{string(status)},
			due: "r.tenant_status = ? AND r.tenant_available_at <= UTC_TIMESTAMP(6)"}
	}
	return readIndex{name: "claim", order: "r.available_at, r.id", args: []any{string(status)},
		due: "r.status = ? AND r.available_at <= UTC_TIMESTAMP(6)"}
}

// blockedByState is the ordered lanes' pre-filter: an earlier row of the
// same key (and tenant) that cannot be claimed now (backing off, under a
// live lease, or dead when parking). It is a plain subquery, so it sees rows
// that other workers hold locked; it is not the whole rule (see keepOrdered).
// Like the rest of the ordering rule it ignores the lane's type filters: a
// key's order holds across every lane of the table. It runs for rows with a
// partition key only, whose key_status is their status (key_order's column).
func blockedByState(table string, park bool) string {
	q := "SELECT 1 FROM " + table + ` e WHERE e.partition_key = r.partition_key AND e.tenant = r.tenant
  AND e.id < r.id AND (e.key_status IN ('pending', 'in_flight') AND e.available_at > UTC_TIMESTAMP(6)`
	if park {
		q += " OR e.key_status = 'dead'"
	}
	return q + ")"
}

// keepOrdered drops candidates that have an earlier unfinished row of their
// key outside this batch: such a row is claimable but locked by another
// worker (SKIP LOCKED passed over it) or was cut by the limit, and the later
// row must wait for it. The read is a plain one, so it sees rows locked by
// others.
func keepOrdered(ctx context.Context, tx txRunner, table string, p store.ClaimParams, recs []store.Record) ([]store.Record, error) {
	cands := make([]claimrule.Candidate, len(recs))
	ids := make([]int64, len(recs))
	for i, r := range recs {
		cands[i] = claimrule.Candidate{ID: r.ID, Tenant: r.Event.Tenant, Key: r.Event.PartitionKey}
		ids[i] = r.ID
	}
	keys, maxID := claimrule.Keys(cands)
	if len(keys) == 0 {
		return recs, nil
	}
	// keys holds no '' (claimrule.Keys), so key_status is status here.
	statuses := "'pending', 'in_flight'"
	if p.ParkOnDead {
		statuses += ", 'dead'"
	}
	q := "SELECT tenant, partition_key, MIN(id) FROM " + table + " WHERE partition_key IN (" + sqlbuild.Marks(len(keys)) +
		") AND key_status IN (" + statuses + ") AND id < ? AND id NOT IN (" + sqlbuild.Marks(len(ids)) + ")" +
		" GROUP BY tenant, partition_key"
	args := append(sqlbuild.StringArgs(keys), maxID)
	args = append(args, sqlbuild.Int64Args(ids)...)
	rows, err := tx.QueryContext(ctx, q, args...)
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
	kept := claimrule.KeepOrdered(cands, blockers)
	byID := make(map[int64]store.Record, len(recs))
	for _, r := range recs {
		byID[r.ID] = r
	}
	out := make([]store.Record, len(kept))
	for i, id := range kept {
		out[i] = byID[id]
	}
	return out, nil
}
