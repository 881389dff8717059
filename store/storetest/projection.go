package storetest

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// RunProjections runs the projection bookkeeping suite: the claim, the
// one-transaction apply, failures, dead rows and their tools, retention and
// the outbox scan. open is as for Run.
func RunProjections(t *testing.T, open Opener) {
	for _, tc := range projectionTests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newProjHarness(t, open)) })
	}
}

var projectionTests = []struct {
	name string
	fn   func(t *testing.T, h *projHarness)
}{
	{"ApplyOnce", testApplyOnce},
	{"ConcurrentDeliveries", testConcurrentDeliveries},
	{"ConcurrentFailures", testConcurrentFailures},
	{"FailThenSucceed", testFailThenSucceed},
	{"NotDue", testNotDue},
	{"MaxAttempts", testMaxAttempts},
	{"PermanentDeadReplay", testPermanentDeadReplay},
	{"FailKeepsDone", testFailKeepsDone},
	{"StatsResetCleanup", testStatsResetCleanup},
	{"ScanOutbox", testScanOutbox},
	{"ReadOutbox", testReadOutbox},
	{"ApplyBatch", testApplyBatch},
	{"ApplyNewBatch", testApplyNewBatch},
	{"ConcurrentBatches", testConcurrentBatches},
	{"ApplyStatements", testApplyStatements},
}

// projHarness is one test's store, projection table and read model: a
// table of counters that the handler increments.
type projHarness struct {
	*harness
	ps    store.ProjectionStore
	ptab  string
	model string
}

func newProjHarness(t *testing.T, open Opener) *projHarness {
	h := newHarness(t, open)
	ps := h.s
	ph := &projHarness{harness: h, ps: ps, ptab: randomName("herald_p"), model: randomName("herald_m")}
	if err := ps.MigrateProjections(h.ctx, ph.ptab); err != nil {
		t.Fatalf("[migrate] MigrateProjections: %v", err)
	}
	if _, err := h.s.DB().ExecContext(h.ctx, "CREATE TABLE "+ph.model+" (k VARCHAR(64) PRIMARY KEY, n BIGINT NOT NULL)"); err != nil {
		t.Fatalf("[read model] %v", err)
	}
	t.Cleanup(func() {
		for _, tb := range []string{ph.model, ph.ptab, h.table} {
			_, _ = h.s.DB().Exec("DROP TABLE " + tb)
		}
	})
	return ph
}

// bind returns the i-th (1-based) placeholder of the store's dialect.
func (h *projHarness) bind(i int) string {
	return h.s.Dialect().Placeholder(i)
}

// bump is a handler body: add one to counter k in tx.
func (h *projHarness) bump(ctx context.Context, tx *sql.Tx, k string) error {
	r, err := tx.ExecContext(ctx, "UPDATE "+h.model+" SET n = n + 1 WHERE k = "+h.bind(1), k)
	if err != nil {
		return err
	}
	if n, _ := r.RowsAffected(); n == 0 {
		_, err = tx.ExecContext(ctx, "INSERT INTO "+h.model+" (k, n) VALUES ("+h.bind(1)+", 1)", k)
	}
	return err
}

func (h *projHarness) count(k string) int64 {
	h.t.Helper()
	var n int64
	err := h.s.DB().QueryRowContext(h.ctx, "SELECT n FROM "+h.model+" WHERE k = "+h.bind(1), k).Scan(&n)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		h.t.Fatalf("[read model] %v", err)
	}
	return n
}

func (h *projHarness) key(eventID string) store.ProjectionKey {
	return store.ProjectionKey{Table: h.ptab, Projection: "proj", Tenant: "t1", EventID: eventID}
}

func (h *projHarness) apply(k store.ProjectionKey, fn func(tx *sql.Tx) error) (store.ApplyResult, error) {
	return h.ps.Apply(h.ctx, store.ApplyParams{ProjectionKey: k, Lease: time.Minute}, fn)
}

func (h *projHarness) fail(k store.ProjectionKey, retryIn time.Duration, maxAttempts int, permanent bool) (store.ProjectionState, int) {
	h.t.Helper()
	st, n, err := h.ps.Fail(h.ctx, store.ProjectionFailure{ProjectionKey: k, Error: "boom", RetryIn: retryIn,
		MaxAttempts: maxAttempts, Permanent: permanent,
		Event: herald.Event{ID: k.EventID, Tenant: k.Tenant, Topic: "t", Type: "T", PartitionKey: "pk",
			Headers: map[string]string{"h": "v"}, Payload: []byte("bad")}})
	if err != nil {
		h.t.Fatalf("[fail] Fail: %v", err)
	}
	return st, n
}

func testApplyOnce(t *testing.T, h *projHarness) {
	k := h.key(herald.NewID())
	for i := range 3 {
		res, err := h.apply(k, func(tx *sql.Tx) error { return h.bump(h.ctx, tx, "a") })
		want := store.Applied
		if i > 0 {
			want = store.Finished
		}
		if err != nil || res.Outcome != want {
			errorf(t, "apply once", "Apply #%d = %+v, %v; want outcome %d", i+1, res, err, want)
		}
	}
	if n := h.count("a"); n != 1 {
		errorf(t, "apply once", "read model counted %d, want 1", n)
	}
}

// testConcurrentDeliveries delivers one event five times at once, through
// five stores (as five processes): exactly one applies it.
func testConcurrentDeliveries(t *testing.T, h *projHarness) {
	for round := range 3 {
		k := h.key(herald.NewID())
		var applied, finished atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 5 {
			ps := h.open(t)
			wg.Go(func() {
				<-start
				res, err := ps.Apply(h.ctx, store.ApplyParams{ProjectionKey: k, Lease: time.Minute},
					func(tx *sql.Tx) error { return h.bump(h.ctx, tx, k.EventID) })
				switch {
				case err != nil:
					errorf(t, "concurrent deliveries", "Apply: %v", err)
				case res.Outcome == store.Applied:
					applied.Add(1)
				case res.Outcome == store.Finished:
					finished.Add(1)
				default:
					errorf(t, "concurrent deliveries", "Apply outcome %+v, want applied or finished", res)
				}
			})
		}
		close(start)
		wg.Wait()
		if applied.Load() != 1 || h.count(k.EventID) != 1 {
			errorf(t, "concurrent deliveries", "round %d: %d applied, %d finished, read model %d; want exactly one",
				round, applied.Load(), finished.Load(), h.count(k.EventID))
		}
	}
}

// testConcurrentFailures lets several workers fail the same new event at
// once (on InnoDB the losers of a rolled-back insert deadlock): every
// Apply must end in a handler failure or a clean outcome, never hang.
func testConcurrentFailures(t *testing.T, h *projHarness) {
	k := h.key(herald.NewID())
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 4 {
		ps := h.open(t)
		wg.Go(func() {
			<-start
			res, err := ps.Apply(h.ctx, store.ApplyParams{ProjectionKey: k, Lease: time.Minute},
				func(tx *sql.Tx) error { return errors.New("nope") })
			if err != nil && !errors.Is(err, store.ErrHandler) {
				errorf(t, "concurrent failures", "Apply: %v (outcome %+v), want a handler error", err, res)
			}
		})
	}
	close(start)
	wg.Wait()
	res, err := h.apply(k, func(tx *sql.Tx) error { return h.bump(h.ctx, tx, "cf") })
	if err != nil || res.Outcome != store.Applied || h.count("cf") != 1 {
		errorf(t, "concurrent failures", "apply after the failures = %+v, %v", res, err)
	}
}

func testFailThenSucceed(t *testing.T, h *projHarness) {
	k := h.key(herald.NewID())
	for i := 1; i <= 2; i++ {
		res, err := h.apply(k, func(tx *sql.Tx) error {
			if err := h.bump(h.ctx, tx, "f"); err != nil {
				return err
			}
			return errors.New("flaky")
		})
		if res.Outcome != store.HandlerFailed || !errors.Is(err, store.ErrHandler) || res.Attempts != i-1 {
			errorf(t, "handler failure", "Apply #%d = %+v, %v; want HandlerFailed after %d attempts", i, res, err, i-1)
		}
		if st, n := h.fail(k, 0, 10, false); st != store.ProjectionFailed || n != i {
			errorf(t, "record failure", "Fail = %s/%d, want failed/%d", st, n, i)
		}
	}
	if n := h.count("f"); n != 0 {
		errorf(t, "rollback", "a failed handler's writes stayed: %d", n)
	}
	res, err := h.apply(k, func(tx *sql.Tx) error { return h.bump(h.ctx, tx, "f") })
	if err != nil || res.Outcome != store.Applied || res.Attempts != 2 || h.count("f") != 1 {
		errorf(t, "retry applies once", "Apply = %+v, %v, read model %d", res, err, h.count("f"))
	}
}

func testNotDue(t *testing.T, h *projHarness) {
	k := h.key(herald.NewID())
	h.fail(k, time.Hour, 10, false)
	res, err := h.apply(k, func(*sql.Tx) error { t.Error("[backoff] handler ran before the backoff passed"); return nil })
	if err != nil || res.Outcome != store.NotDue || res.Wait < 59*time.Minute || res.Wait > time.Hour {
		errorf(t, "backoff", "Apply = %+v, %v; want NotDue with about an hour to wait", res, err)
	}
}

func testMaxAttempts(t *testing.T, h *projHarness) {
	k := h.key(herald.NewID())
	for i, want := range []store.ProjectionState{store.ProjectionFailed, store.ProjectionFailed, store.ProjectionDead} {
		if st, n := h.fail(k, 0, 3, false); st != want || n != i+1 {
			errorf(t, "max attempts", "Fail #%d = %s/%d, want %s", i+1, st, n, want)
		}
	}
}

func testPermanentDeadReplay(t *testing.T, h *projHarness) {
	k := h.key(herald.NewID())
	if st, n := h.fail(k, 0, 10, true); st != store.ProjectionDead || n != 1 {
		errorf(t, "permanent", "Fail(permanent) = %s/%d, want dead after 1", st, n)
	}
	res, err := h.apply(k, func(*sql.Tx) error { t.Error("[dead is final] handler ran on a dead row"); return nil })
	if err != nil || res.Outcome != store.Finished || res.State != store.ProjectionDead {
		errorf(t, "dead is final", "Apply = %+v, %v", res, err)
	}
	rows, err := h.ps.ListProjection(h.ctx, store.ProjectionListParams{Table: h.ptab, Projection: "proj", State: store.ProjectionDead})
	if err != nil || len(rows) != 1 || string(rows[0].Event.Payload) != "bad" || rows[0].Event.Headers["h"] != "v" ||
		rows[0].Event.PartitionKey != "pk" || rows[0].LastError != "boom" || rows[0].Attempts != 1 {
		errorf(t, "dead keeps the event", "ListProjection(dead) = %+v, %v", rows, err)
	}
	if n, err := h.ps.ReplayProjection(h.ctx, h.ptab, "proj", nil); err != nil || n != 1 {
		errorf(t, "replay", "ReplayProjection = %d, %v; want 1", n, err)
	}
	due, err := h.ps.ListProjection(h.ctx, store.ProjectionListParams{Table: h.ptab, Projection: "proj",
		State: store.ProjectionFailed, Due: true})
	if err != nil || len(due) != 1 || due[0].Attempts != 0 {
		errorf(t, "replay", "due failed rows after replay = %+v, %v", due, err)
	}
	res, err = h.apply(k, func(tx *sql.Tx) error { return h.bump(h.ctx, tx, "r") })
	if err != nil || res.Outcome != store.Applied || h.count("r") != 1 {
		errorf(t, "replay", "Apply after replay = %+v, %v", res, err)
	}
}

func testFailKeepsDone(t *testing.T, h *projHarness) {
	k := h.key(herald.NewID())
	if _, err := h.apply(k, func(*sql.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.fail(k, 0, 1, true); st != store.ProjectionDone {
		errorf(t, "done is final", "Fail on a done row left it %s", st)
	}
}

func testStatsResetCleanup(t *testing.T, h *projHarness) {
	for range 3 {
		if _, err := h.apply(h.key(herald.NewID()), func(*sql.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	h.fail(h.key(herald.NewID()), time.Hour, 10, false)
	h.fail(h.key(herald.NewID()), 0, 10, true)
	st, err := h.ps.ProjectionStats(h.ctx, h.ptab, "")
	if err != nil || len(st) != 1 || st[0].Done != 3 || st[0].Failed != 1 || st[0].Dead != 1 || st[0].Projection != "proj" {
		errorf(t, "stats", "ProjectionStats = %+v, %v", st, err)
	}
	eventually(t, 5*time.Second, "cleanup", func() bool {
		n, err := h.ps.CleanupProjection(h.ctx, h.ptab, "proj", time.Millisecond, 2)
		if err != nil {
			t.Fatalf("[cleanup] %v", err)
		}
		return n == 2
	})
	var hooked bool
	n, err := h.ps.ResetProjection(h.ctx, h.ptab, "proj", func(tx *sql.Tx) error {
		hooked = true
		_, err := tx.Exec("DELETE FROM " + h.model)
		return err
	})
	if err != nil || n != 3 || !hooked {
		errorf(t, "reset", "ResetProjection = %d, %v (hook ran: %v); want 3 rows", n, err, hooked)
	}
	if st, err := h.ps.ProjectionStats(h.ctx, h.ptab, "proj"); err != nil || len(st) != 0 {
		errorf(t, "reset", "stats after reset = %+v, %v", st, err)
	}
}

func testScanOutbox(t *testing.T, h *projHarness) {
	evs := make([]herald.Event, 5)
	for i := range evs {
		evs[i] = event("Scan")
		evs[i].Tenant = "t1"
	}
	h.enqueue(evs...)
	for _, i := range []int{1, 3} {
		if _, err := h.apply(h.key(evs[i].ID), func(*sql.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	h.fail(h.key(evs[4].ID), time.Hour, 10, false) // failed is not finished: still scanned
	p := store.OutboxScanParams{Scope: h.scope(), ProjectionTable: h.ptab, Projection: "proj", Limit: 10}
	recs, err := h.ps.ScanOutbox(h.ctx, p)
	if err != nil || len(recs) != 3 || recs[0].Event.ID != evs[0].ID || recs[1].Event.ID != evs[2].ID ||
		recs[2].Event.ID != evs[4].ID || string(recs[0].Event.Payload) != `{"n":1}` || recs[0].Event.CreatedAt.IsZero() {
		errorf(t, "scan skips finished", "ScanOutbox = %d rows %+v, %v", len(recs), recs, err)
	}
	if len(recs) == 3 {
		p.AfterID = recs[1].ID
		if more, err := h.ps.ScanOutbox(h.ctx, p); err != nil || len(more) != 1 || more[0].Event.ID != evs[4].ID {
			errorf(t, "scan after id", "ScanOutbox(after) = %+v, %v", more, err)
		}
	}
}

// testReadOutbox reads a bounded number of rows, open or not: finished
// rows and rows out of scope are seen (Visible) but not open, and a read
// by ids returns exactly those.
func testReadOutbox(t *testing.T, h *projHarness) {
	evs := make([]herald.Event, 5)
	for i := range evs {
		evs[i] = event("Read")
		evs[i].Tenant = "t1"
	}
	h.enqueue(evs...)
	for _, i := range []int{1, 3} {
		if _, err := h.apply(h.key(evs[i].ID), func(*sql.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	h.fail(h.key(evs[4].ID), time.Hour, 10, false) // failed is not finished: still open
	p := store.OutboxScanParams{Scope: h.scope(), ProjectionTable: h.ptab, Projection: "proj", Limit: 10}
	page, err := h.ps.ReadOutbox(h.ctx, p)
	if err != nil || len(page.Visible) != 5 || len(page.Open) != 3 || page.Open[0].Event.ID != evs[0].ID ||
		page.Open[1].Event.ID != evs[2].ID || page.Open[2].Event.ID != evs[4].ID ||
		string(page.Open[0].Event.Payload) != `{"n":1}` || page.Open[0].Event.CreatedAt.IsZero() {
		errorf(t, "read sees every row, opens unfinished", "ReadOutbox = %+v, %v", page, err)
		return
	}
	p.Limit = 2
	if two, err := h.ps.ReadOutbox(h.ctx, p); err != nil || len(two.Visible) != 2 || two.Visible[1] != page.Visible[1] ||
		len(two.Open) != 1 {
		errorf(t, "read is bounded by rows read", "ReadOutbox(limit 2) = %+v, %v", two, err)
	}
	p.Limit, p.IDs = 0, []int64{page.Visible[3], page.Visible[4]}
	if byID, err := h.ps.ReadOutbox(h.ctx, p); err != nil || len(byID.Visible) != 2 || len(byID.Open) != 1 ||
		byID.Open[0].Event.ID != evs[4].ID {
		errorf(t, "read by ids", "ReadOutbox(ids) = %+v, %v", byID, err)
	}
	// The age of an open row is on the database clock: it grows from 0
	// as that clock moves past the row's created_at.
	all := store.OutboxScanParams{Scope: h.scope(), ProjectionTable: h.ptab, Projection: "proj", Limit: 10}
	eventually(t, 5*time.Second, "ReadOutbox and ScanOutbox report each row's age on the database clock", func() bool {
		read, err := h.ps.ReadOutbox(h.ctx, all)
		scan, err2 := h.ps.ScanOutbox(h.ctx, all)
		return err == nil && err2 == nil && len(read.Open) == 3 && len(scan) == 3 &&
			read.Open[0].Age > 0 && read.Open[0].Age < time.Minute && scan[0].Age > 0 && scan[0].Age < time.Minute
	})
	p.IDs, p.IncludeTypes = nil, []string{"Other"}
	if other, err := h.ps.ReadOutbox(h.ctx, p); err != nil || len(other.Visible) != 5 || len(other.Open) != 0 {
		errorf(t, "rows out of scope are seen, not open", "ReadOutbox(other type) = %+v, %v", other, err)
	}
}

// testApplyBatch applies a batch with a new event, a done one, a
// duplicate within the batch, a failing one and one after it: the items
// before the failure commit, the one after it does not run.
func testApplyBatch(t *testing.T, h *projHarness) {
	done, e1, bad, e2 := h.key(herald.NewID()), h.key(herald.NewID()), h.key(herald.NewID()), h.key(herald.NewID())
	if _, err := h.apply(done, func(*sql.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	keys := []store.ProjectionKey{e1, done, e1, bad, e2}
	ps := make([]store.ApplyParams, len(keys))
	for i, k := range keys {
		ps[i] = store.ApplyParams{ProjectionKey: k, Lease: time.Minute}
	}
	res, err := h.ps.ApplyBatch(h.ctx, ps, func(tx *sql.Tx, i int) error {
		if err := h.bump(h.ctx, tx, "batch"); err != nil {
			return err
		}
		if keys[i] == bad {
			return errors.New("bad")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("[batch] ApplyBatch: %v", err)
	}
	want := []store.Outcome{store.Applied, store.Finished, store.Finished, store.HandlerFailed, store.NotRun}
	for i, r := range res {
		if r.Outcome != want[i] {
			errorf(t, "batch", "item %d: outcome %d, want %d", i, r.Outcome, want[i])
		}
	}
	if len(res) == 5 && !errors.Is(res[3].Err, store.ErrHandler) {
		errorf(t, "batch", "failed item's Err = %v, want a handler error", res[3].Err)
	}
	if n := h.count("batch"); n != 1 {
		errorf(t, "batch prefix", "read model counted %d, want 1 (the item before the failure, once)", n)
	}
	if r, err := h.apply(e2, func(*sql.Tx) error { return nil }); err != nil || r.Outcome != store.Applied {
		errorf(t, "batch", "the item after the failure was not run: %+v, %v", r, err)
	}
	if r, err := h.apply(bad, func(tx *sql.Tx) error { return h.bump(h.ctx, tx, "batch") }); err != nil || r.Outcome != store.Applied {
		errorf(t, "batch", "the failed event is claimable afterwards: %+v, %v", r, err)
	}
}

// testApplyNewBatch applies a batch of events the projection has never
// seen (the stores' one-INSERT path) whose second handler fails: the first
// commits once, the failed one stays claimable, the third does not run and
// nothing of the failed attempt remains.
func testApplyNewBatch(t *testing.T, h *projHarness) {
	keys := []store.ProjectionKey{h.key(herald.NewID()), h.key(herald.NewID()), h.key(herald.NewID())}
	ps := make([]store.ApplyParams, len(keys))
	for i, k := range keys {
		ps[i] = store.ApplyParams{ProjectionKey: k, Lease: time.Minute}
	}
	res, err := h.ps.ApplyBatch(h.ctx, ps, func(tx *sql.Tx, i int) error {
		if err := h.bump(h.ctx, tx, "new"); err != nil {
			return err
		}
		if i == 1 {
			return errors.New("bad")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("[new batch] ApplyBatch: %v", err)
	}
	want := []store.Outcome{store.Applied, store.HandlerFailed, store.NotRun}
	for i, r := range res {
		if r.Outcome != want[i] {
			errorf(t, "new batch", "item %d: outcome %d, want %d", i, r.Outcome, want[i])
		}
	}
	if n := h.count("new"); n != 1 {
		errorf(t, "new batch", "read model counted %d, want 1 (the first item, once)", n)
	}
	if r, err := h.apply(keys[0], func(*sql.Tx) error { return nil }); err != nil || r.Outcome != store.Finished {
		errorf(t, "new batch", "the applied event again: %+v, %v; want finished", r, err)
	}
	for _, k := range keys[1:] {
		if r, err := h.apply(k, func(*sql.Tx) error { return nil }); err != nil || r.Outcome != store.Applied {
			errorf(t, "new batch", "event %s after the failure: %+v, %v; want applied", k.EventID, r, err)
		}
	}
}

// testConcurrentBatches has four stores apply the same events in batches
// at once: every event is applied once, the others wait and find it done.
func testConcurrentBatches(t *testing.T, h *projHarness) {
	keys := make([]store.ProjectionKey, 20)
	for i := range keys {
		keys[i] = h.key(herald.NewID())
	}
	// The counter exists up front: bump's update-else-insert is not an
	// atomic upsert, and racing inserts are not what this checks.
	if _, err := h.s.DB().ExecContext(h.ctx, "INSERT INTO "+h.model+" (k, n) VALUES ('cb', 0)"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var applied atomic.Int32
	for range 4 {
		ps := h.open(t)
		order := make([]store.ApplyParams, len(keys))
		for i := range keys {
			// One order for all, as lanes keep it: opposite orders would
			// only measure the database's deadlock detection.
			order[i] = store.ApplyParams{ProjectionKey: keys[i], Lease: time.Minute}
		}
		wg.Go(func() {
			for start := 0; start < len(order); start += 5 {
				batch := order[start : start+5]
				res, err := ps.ApplyBatch(h.ctx, batch, func(tx *sql.Tx, i int) error { return h.bump(h.ctx, tx, "cb") })
				if err != nil {
					errorf(t, "concurrent batches", "ApplyBatch: %v", err)
					return
				}
				for _, r := range res {
					switch r.Outcome {
					case store.Applied:
						applied.Add(1)
					case store.Finished:
					default:
						errorf(t, "concurrent batches", "outcome %+v, want applied or finished", r)
					}
				}
			}
		})
	}
	wg.Wait()
	if n := h.count("cb"); n != int64(len(keys)) || applied.Load() != int32(len(keys)) {
		errorf(t, "concurrent batches", "read model %d, applied %d; want %d each", n, applied.Load(), len(keys))
	}
}
