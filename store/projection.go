package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/heraldhq/herald"
)

// DefaultProjectionTable is the projection bookkeeping table used when none
// is named: one row per (projection, tenant, event id).
const DefaultProjectionTable = "herald_projection_events"

// ProjectionState is a projection row's state. The values are stored as is;
// see the projector package doc for the transitions.
type ProjectionState string

// The projection row states.
const (
	// ProjectionProcessing: claimed by a worker whose lease has not run out.
	// In the one-transaction apply it exists only inside that transaction.
	ProjectionProcessing ProjectionState = "processing"
	// ProjectionFailed: the handler failed; claimable again after next_attempt_at.
	ProjectionFailed ProjectionState = "failed"
	// ProjectionDone: applied to the read model. Never applied again.
	ProjectionDone ProjectionState = "done"
	// ProjectionDead: gave up (max attempts or a permanent error). Never
	// applied again unless replayed.
	ProjectionDead ProjectionState = "dead"
)

// ProjectionKey names one event of one projection in one table.
type ProjectionKey struct {
	// Table is the projection table; it must pass herald.ValidateIdentifier.
	Table      string
	Projection string
	Tenant     string
	EventID    string
}

// Outcome is what an Apply did with its claim.
type Outcome int

// NotRun is the zero Outcome: ApplyBatch stopped before the item.
const NotRun Outcome = 0

// The outcomes of Apply.
const (
	// Applied: claimed, the handler ran and the row is done, committed.
	Applied Outcome = iota + 1
	// Finished: the row was done or dead already; nothing ran.
	Finished
	// NotDue: the row failed before and its backoff has not passed (Wait).
	NotDue
	// Busy: another worker holds a live processing lease (Wait until it ends).
	Busy
	// HandlerFailed: claimed, but the handler (or the commit) failed and the
	// transaction was rolled back; the error is returned. Record it with Fail.
	HandlerFailed
)

// ApplyParams is one projection step.
type ApplyParams struct {
	ProjectionKey
	// Lease bounds the claim: a processing row older than this may be taken
	// over by another worker.
	Lease time.Duration
}

// ApplyResult reports an Apply.
type ApplyResult struct {
	Outcome Outcome
	// State is the row's state when not applied (Finished, NotDue, Busy).
	State ProjectionState
	// Attempts counts the failed attempts before this one.
	Attempts int
	// Wait is how long until the row may be claimed (NotDue, Busy).
	Wait time.Duration
	// Err is the handler's error, wrapping ErrHandler (HandlerFailed from
	// ApplyBatch; Apply returns it as its error).
	Err error
}

// ProjectionFailure records one failed attempt.
type ProjectionFailure struct {
	ProjectionKey
	// Error is the failure's text; stores trim it to MaxErrorLength.
	Error string
	// RetryIn is the backoff before the next attempt.
	RetryIn time.Duration
	// MaxAttempts: the row goes dead when its attempts reach this (0: never).
	MaxAttempts int
	// Permanent sends the row dead at once.
	Permanent bool
	// Event is kept on the row so that a dead event can be replayed after
	// its source has forgotten it.
	Event herald.Event
}

// ProjectionRow is one projection row as read.
type ProjectionRow struct {
	ProjectionKey
	State     ProjectionState
	Attempts  int
	LastError string
	// Event is the kept event (failed and dead rows); zero otherwise.
	Event herald.Event
	// Age is how long since the row last changed, on the database clock.
	Age time.Duration
}

// ProjectionStats counts one projection's rows by state.
type ProjectionStats struct {
	Projection string
	Processing int64
	Failed     int64
	Dead       int64
	Done       int64
	// LastDoneAge is how long ago the latest event was applied (0: never).
	LastDoneAge time.Duration
	// OldestFailedAge is the age of the oldest failed row (0: none).
	OldestFailedAge time.Duration
}

// ProjectionListParams pages through one projection's rows of one state.
type ProjectionListParams struct {
	Table      string
	Projection string
	State      ProjectionState
	// Due limits failed rows to those whose backoff has passed.
	Due   bool
	Limit int
}

// OutboxScanParams asks for outbox rows a projection has not finished.
type OutboxScanParams struct {
	// Scope is the outbox table and its filters.
	Scope
	// ProjectionTable and Projection name the bookkeeping to skip against:
	// rows done or dead for the projection are left out.
	ProjectionTable string
	Projection      string
	// AfterID starts the scan after this outbox id.
	AfterID int64
	// Limit bounds the rows returned (ScanOutbox) or read (ReadOutbox).
	Limit int
	// IDs, when set, makes ReadOutbox read exactly these outbox ids
	// (AfterID and Limit are then ignored).
	IDs []int64
}

// OutboxPage is one step of ReadOutbox.
type OutboxPage struct {
	// Open are the rows read that the scope selects and the projection
	// has not finished, in id order.
	Open []Record
	// Visible is every id read, in id order, selected or not, finished or
	// not: an id missing between two of them (or below the first) was not
	// visible to the read, a transaction yet to commit or rolled back.
	Visible []int64
}

// ErrHandler wraps the error of a handler (or of the commit after it) in
// Apply's error, so callers can tell it from a failure to reach the store.
var ErrHandler = errors.New("projection handler failed")

// ProjectionStore keeps the projection bookkeeping next to a read model:
// the claim, the handler and the done mark in one transaction. It is part
// of every Store and checked by storetest.RunProjections. Implementations
// are safe for concurrent use.
type ProjectionStore interface {
	// MigrateProjections creates or upgrades the projection table.
	MigrateProjections(ctx context.Context, table string) error
	// Apply opens a transaction, claims p's row (insert as processing, or
	// take over a failed row whose backoff passed or an expired lease), runs
	// fn in the transaction, marks the row done and commits. Done and dead
	// rows are never claimed. Two concurrent Applys of one key apply it
	// once: the later one waits for the earlier and reports Finished.
	// On fn's error it rolls back and returns HandlerFailed with an error
	// wrapping ErrHandler and fn's error.
	Apply(ctx context.Context, p ApplyParams, fn func(tx *sql.Tx) error) (ApplyResult, error)
	// ApplyBatch is Apply for several events, in order, in one
	// transaction (one commit, one fsync). It stops at the first handler
	// failure: that item is reported HandlerFailed with its error in the
	// result's Err, the items after it NotRun, and the items before it are
	// committed (run again in a new transaction, since the failure rolled
	// them back). An error returned means nothing was committed.
	ApplyBatch(ctx context.Context, ps []ApplyParams, fn func(tx *sql.Tx, i int) error) ([]ApplyResult, error)
	// Fail records a failed attempt in its own transaction: attempts + 1,
	// last_error, next attempt after the backoff, dead when permanent or out
	// of attempts. It never changes a done or dead row. It returns the row's
	// state afterwards and its attempts.
	Fail(ctx context.Context, f ProjectionFailure) (ProjectionState, int, error)
	// ProjectionStats counts the rows of every projection in table, or of
	// one when projection is not empty.
	ProjectionStats(ctx context.Context, table, projection string) ([]ProjectionStats, error)
	// ListProjection returns rows of one state, oldest change first.
	ListProjection(ctx context.Context, p ProjectionListParams) ([]ProjectionRow, error)
	// ReplayProjection moves dead rows back to failed, due now, attempts
	// reset: the given event ids, or all of the projection's when empty.
	ReplayProjection(ctx context.Context, table, projection string, eventIDs []string) (int64, error)
	// ResetProjection deletes all of a projection's rows and runs reset (if
	// not nil) in the same transaction, so the read model and its
	// bookkeeping are cleared together. It returns the rows deleted.
	ResetProjection(ctx context.Context, table, projection string, reset func(tx *sql.Tx) error) (int64, error)
	// CleanupProjection deletes up to limit done rows older than olderThan.
	CleanupProjection(ctx context.Context, table, projection string, olderThan time.Duration, limit int) (int64, error)
	// ScanOutbox returns outbox rows after p.AfterID in id order that the
	// projection has not finished (no done or dead row).
	ScanOutbox(ctx context.Context, p OutboxScanParams) ([]Record, error)
	// ReadOutbox reads up to p.Limit outbox rows after p.AfterID in id
	// order (or exactly p.IDs) and reports which of them are open for the
	// projection, and every id it saw: its cost is bounded by the rows
	// read, however many the projection has finished.
	ReadOutbox(ctx context.Context, p OutboxScanParams) (OutboxPage, error)
}
