package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald"
)

// Status is an outbox row's state. The values are stored as is.
type Status string

// The outbox row states; see the package doc for the transitions.
const (
	StatusPending   Status = "pending"
	StatusInFlight  Status = "in_flight"
	StatusDelivered Status = "delivered"
	StatusDead      Status = "dead"
)

// ErrNotFound is returned when an event id is not in the table.
var ErrNotFound = errors.New("store: event not found")

// Scope selects the rows of one lane: its table and, optionally, one tenant
// and event type filters.
type Scope struct {
	// Table is the outbox table; it must pass herald.ValidateIdentifier.
	Table string
	// Tenant, when not empty, limits the scope to that tenant.
	Tenant string
	// IncludeTypes, when not empty, limits the scope to these event types.
	IncludeTypes []string
	// ExcludeTypes leaves these event types out.
	ExcludeTypes []string
}

// ClaimParams asks for a batch of claimable rows.
type ClaimParams struct {
	Scope
	// Owner is the claiming worker's id ("node/lane-01"), kept on the row.
	Owner string
	// Token is the fencing token written on every claimed row.
	Token int64
	// Lease is how long the rows stay reserved, on the database clock.
	Lease time.Duration
	// Limit is the most rows to claim.
	Limit int
	// Ordered claims per partition key in commit order (see package doc).
	Ordered bool
	// ParkOnDead makes a dead row hold back later rows of its key.
	ParkOnDead bool
	// AsyncCommit lets Claim return as soon as the rows are locked to this
	// claim, its commit still on the way (a store may ignore it). The relay
	// sets it and publishes meanwhile: the claim's durability is not needed
	// for correctness, only that no one else takes the rows, which their
	// locks ensure. Fenced marks of the rows wait on those locks for the
	// commit; if the commit fails, the marks find the rows lost and the rows
	// are published again, as after any lost lease.
	AsyncCommit bool
	// HandedOver limits the claim to rows a log lane's reader handed over
	// (a non-empty lease_owner): its retries, parked keys and delayed
	// events. Only stores that are a LogReader honour it.
	HandedOver bool
}

// Record is one outbox row as claimed or read.
type Record struct {
	// ID is the row id, the claim order. Not a dedupe key: use Event.ID.
	ID    int64
	Event herald.Event
	// Status is the row's state when it was read.
	Status Status
	// Attempts counts claims, this one included for claimed rows.
	Attempts int
	// LastError is the last failure's text, trimmed.
	LastError string
	// Age is how old the event is on the database clock when it was read.
	Age time.Duration
	// AvailableAt is the next attempt (pending) or the lease end (in flight).
	AvailableAt time.Time
	// Txn is, on a record read from a database's log, the transaction that
	// wrote it as that log numbers it (PostgreSQL: its xid); zero
	// otherwise. A store may need it to wait until the transaction is
	// visible to other sessions before it writes the row (HandOver).
	Txn uint64
	// DueFor is, on a claimed record, how long the row had been due when
	// the claim took it: the database's now in the claim less the row's
	// available_at before the claim rewrote it to the lease end (for an
	// event due at once that is its insert time, for a delayed one the time
	// it was due, for a retry its backoff's end). Never negative. On a log
	// lane's record it is the time since its transaction committed, as
	// Next returned it. Zero on records read otherwise (List, Get).
	DueFor time.Duration
	// DiedAt is when a dead row went dead, on the database clock (zero for
	// rows in other states).
	DiedAt time.Time
	// DeliveredAt is when the broker accepted it (delivered rows).
	DeliveredAt time.Time
	// Receipt is what the broker reported on delivery.
	Receipt Receipt
	// LeaseOwner is the worker that holds or last held the row.
	LeaseOwner string
	// Errors are the row's last failed attempts (at most
	// MaxAttemptErrors), oldest first, as Get reads them; claims and lists
	// leave them out. Empty on a mapped table, which keeps LastError only.
	Errors []AttemptError
	// HeadersErr says why the headers column is not a JSON object of
	// strings (a row written by plain SQL); Event.Headers is then nil. A
	// store reports it here instead of failing the read, so one careless
	// row cannot stall a lane; the relay kills such a row unpublished.
	HeadersErr error
	// BodyErr says why a mapped table's row cannot make the message body
	// its lane's body template asks for (a payload embedded as JSON that
	// is not JSON); the relay kills such a row unpublished, as it does one
	// with bad headers.
	BodyErr error
}

// HeadersError is what a store reports in Record.HeadersErr (possibly
// wrapped): why the headers column is not a JSON object of strings, and
// the column's text as stored, so that an operator sees what was written.
type HeadersError struct {
	// Stored is the headers column verbatim.
	Stored string
	// Reason says what is wrong with it.
	Reason string
}

func (e *HeadersError) Error() string { return "headers is not a JSON object of strings: " + e.Reason }

// Receipt is the broker's answer for a delivered event, kept on its row.
// It lives beside herald.Event so that publishers need not import the
// storage seam; this alias keeps store.Receipt working.
type Receipt = herald.Receipt

// Delivery marks one claimed row delivered.
type Delivery struct {
	ID      int64
	Receipt Receipt
}

// Failure records one failed publish of a claimed row.
type Failure struct {
	ID int64
	// Error is the failure's text; stores trim it to MaxErrorLength.
	Error string
	// RetryIn is the backoff: the row becomes claimable again after it.
	RetryIn time.Duration
}

// MaxErrorLength is the longest last_error a store keeps, in bytes.
const MaxErrorLength = 1000

// AttemptError is one failed attempt of an event, as its row keeps it:
// Retry and Kill append one, in the statement that marks the failure.
type AttemptError struct {
	// Attempt is the row's attempt count when it failed (1 for the first
	// claim; a replay starts the count again).
	Attempt int `json:"attempt"`
	// At is when the failure was marked, on the database clock (UTC).
	At time.Time `json:"at"`
	// Error is the failure's text, trimmed as LastError is.
	Error string `json:"error"`
}

// MaxAttemptErrors is how many failed attempts an outbox row keeps: the
// failure mark drops the oldest beyond it, so a row that fails for days
// does not grow without bound.
const MaxAttemptErrors = 10

// Fence identifies a claim: the table and the token written on its rows.
type Fence struct {
	Table string
	Token int64
}

// CleanupParams asks for one bounded round of retention cleanup. A zero age
// keeps those rows forever.
type CleanupParams struct {
	Scope
	// Delivered deletes delivered rows older than this (by delivered_at).
	Delivered time.Duration
	// Dead deletes dead rows older than this (by their last change).
	Dead time.Duration
	// Active deletes pending rows older than this (by created_at).
	Active time.Duration
	// Limit bounds the rows deleted per state in this round.
	Limit int
}

// LaneStats counts one scope's rows by state.
type LaneStats struct {
	Pending   int64 // pending, never attempted
	Retrying  int64 // pending after at least one failed attempt
	InFlight  int64
	Delivered int64
	Dead      int64
	// OldestPendingAge is the lag: how long the pending row that has been
	// due the longest has waited since it became due (its available_at: a
	// delayed event is not late before its time, a retried one from the end
	// of its backoff); 0 if no pending row is due.
	OldestPendingAge time.Duration
}

// ListParams pages through rows of one state, oldest first.
type ListParams struct {
	Scope
	Status  Status
	AfterID int64
	// AfterEventID pages a mapped table (Mapper), which has no row ids:
	// its rows are listed in event id order, those after this one. A
	// mapped table's listed records have as ID a number the store gives
	// their event id for as long as it runs, which AfterID takes too.
	AfterEventID string
	Limit        int
}

// Store is what the relay and the CLI need from a database. Implementations
// must be safe for concurrent use, take every time from the database clock,
// and pass storetest.Run.
//
// Besides the outbox's rows, every store keeps Herald's other tables (lane
// state, replay history, projections), lists the tenants of fair lanes,
// reports and drops schemas: those abilities are part of Store, so that no
// caller has to ask for them. What only some databases can do stays an
// optional interface, found by type assertion, with the fallback documented
// on it: Waker, Peeker, UseIndexer, TenantSkipLister, LogReader, Mapper
// and Previewer.
type Store interface {
	// Dialect is the database kind, for building a herald.Outbox.
	Dialect() herald.Dialect
	// DB is the connection pool, for callers that enqueue in their own transactions.
	DB() *sql.DB
	// Migrate creates or upgrades table (and Herald's own tables) to the
	// latest schema version. It is safe to run concurrently and repeatedly.
	Migrate(ctx context.Context, table string) error

	// Claim leases up to p.Limit claimable rows to p.Owner under p.Token,
	// bumping their attempts, in claim order.
	Claim(ctx context.Context, p ClaimParams) ([]Record, error)
	// Complete marks rows delivered. It returns the ids no longer held under f.
	Complete(ctx context.Context, f Fence, ds []Delivery) (lost []int64, err error)
	// Retry puts rows back to pending after their backoff.
	Retry(ctx context.Context, f Fence, fs []Failure) (lost []int64, err error)
	// Kill moves rows to dead, keeping the error.
	Kill(ctx context.Context, f Fence, fs []Failure) (lost []int64, err error)
	// Release puts rows back to pending at once, undoing the claim's attempt.
	Release(ctx context.Context, f Fence, ids []int64) (lost []int64, err error)
	// Discard deletes stale rows instead of publishing them.
	Discard(ctx context.Context, f Fence, ids []int64) (lost []int64, err error)

	// TryLock returns true for at most one caller (across processes) per
	// interval for name: the gate for "once per interval" maintenance.
	TryLock(ctx context.Context, name string, interval time.Duration) (bool, error)
	// Cleanup deletes old rows per p, returning how many it deleted.
	Cleanup(ctx context.Context, p CleanupParams) (int64, error)

	// Stats counts the scope's rows by state (a plain read, not SKIP LOCKED).
	Stats(ctx context.Context, s Scope) (LaneStats, error)
	// Unselected counts the rows of within (its table, and its tenant and
	// type filters if set) that are pending or in flight and that none of
	// lanes selects: rows no configured lane will ever take, which no lane's
	// Stats shows. Every lane scope must be on within's table. A plain read.
	Unselected(ctx context.Context, within Scope, lanes []Scope) (int64, error)
	// List returns rows of one state.
	List(ctx context.Context, p ListParams) ([]Record, error)
	// Get returns one row by event id, or ErrNotFound.
	Get(ctx context.Context, table, eventID string) (Record, error)
	// Replay moves dead rows back to pending with attempts reset: the given
	// event ids, or every dead row in scope when ids is empty. It returns how many.
	Replay(ctx context.Context, s Scope, eventIDs []string) (int64, error)
	// Purge deletes dead rows: the given event ids, or all in scope when empty.
	Purge(ctx context.Context, s Scope, eventIDs []string) (int64, error)

	// Close releases the store's resources (the pool, if the store opened it).
	Close() error

	// The abilities every store has, each an interface of its own for
	// callers that need only it (a projector takes a ProjectionStore).
	LaneStater
	Replaying
	TenantLister
	SchemaChecker
	TableChecker
	Dropper
	ProjectionStore
}

// Waker is an optional Store ability: a channel that receives when another
// process commits events to table (PostgreSQL LISTEN/NOTIFY). Stores without
// it are polled (adaptively) by the relay.
type Waker interface {
	Wakeups(ctx context.Context, table string) (<-chan struct{}, error)
}

// Dropper is part of every Store: delete an outbox table and its
// migration records, for benchmarks and tests that want a fresh table
// (a reused queue table keeps its dead index entries until vacuumed).
// Dropping a table that does not exist does nothing.
type Dropper interface {
	Drop(ctx context.Context, table string) error
}

// Peeker is an optional Store ability: a cheap look, without locks, for
// pending rows of a scope that are due. Relays on stores without wakeups
// peek between claims while a lane is active, and claim only when a peek
// finds rows: a peek is one indexed read, a claim a locking transaction.
// On stores without it they claim at every poll.
type Peeker interface {
	Ready(ctx context.Context, s Scope) (bool, error)
}

// SchemaChecker is part of every Store: whether a table was
// migrated, without changing anything, so commands that only read or write
// rows can refuse a database that was never migrated with the command that
// fixes it, instead of failing on a missing table or creating one.
type SchemaChecker interface {
	// SchemaVersion returns the table's recorded schema version (0: never
	// migrated) and the latest version this build knows.
	SchemaVersion(ctx context.Context, table string) (current, latest int, err error)
}

// TableChecker is part of every Store: whether a table is as this
// build reads it, without changing anything, so that a relay can tell a
// table that needs `herald migrate` from a database that is down.
type TableChecker interface {
	// CheckTable returns nil when table exists with every column this
	// build reads and it and Herald's own tables are at the latest schema
	// version; a *SchemaError saying what is missing or behind otherwise;
	// and any other error when it could not tell (the database did not
	// answer).
	CheckTable(ctx context.Context, table string) error
}

// ErrSchema matches (errors.Is) every SchemaError: a table that is not as
// this build reads it. Waiting does not fix it.
var ErrSchema = errors.New("not migrated")

// SchemaError says how a table is not as this build reads it, and its text
// what fixes it: a table that does not exist, or one behind the latest
// migration (or whose store's own tables are), needs migrating (`herald
// migrate`, or Migrate/MigrateFor in a program); columns missing from a
// table that records the latest version were dropped or never made by
// Herald, and need adding by hand.
type SchemaError struct {
	Table string
	// NoTable says the table does not exist.
	NoTable bool
	// Columns are the columns it lacks.
	Columns []string
	// Version and Latest are its recorded schema version and this build's,
	// when it is behind; Own says they are those of Herald's own tables.
	Version, Latest int
	Own             bool
}

const migrateHint = "run `herald migrate` (Migrate or MigrateFor in a program)"

func (e *SchemaError) Error() string {
	switch {
	case e.NoTable:
		return fmt.Sprintf("table %s does not exist: %s", e.Table, migrateHint)
	case len(e.Columns) > 0:
		return fmt.Sprintf("table %s lacks column %s, which Herald reads; its migrations are recorded as done, "+
			"so add the column by hand (docs/sql.md has the table's definition)", e.Table, strings.Join(e.Columns, ", "))
	case e.Own:
		return fmt.Sprintf("Herald's own tables are at schema version %d of %d: %s", e.Version, e.Latest, migrateHint)
	}
	return fmt.Sprintf("table %s is at schema version %d of %d: %s", e.Table, e.Version, e.Latest, migrateHint)
}

// Is makes errors.Is(err, ErrSchema) true.
func (e *SchemaError) Is(target error) bool { return target == ErrSchema }

// ErrMisconfigured is wrapped by a store's Open error when the server
// answered and refused the connection's settings: the credentials, a
// database that does not exist, a server version Herald does not support.
// Waiting does not fix it; a server that is down, starting up or out of
// connections is a herald.Unavailable error instead.
var ErrMisconfigured = errors.New("the server refuses this connection's settings")

// Misconfigured marks err as ErrMisconfigured (errors.Is), keeping its
// text. Misconfigured(nil) is nil.
func Misconfigured(err error) error {
	if err == nil {
		return nil
	}
	return &misconfiguredError{err}
}

type misconfiguredError struct{ err error }

func (e *misconfiguredError) Error() string        { return e.err.Error() }
func (e *misconfiguredError) Unwrap() error        { return e.err }
func (e *misconfiguredError) Is(target error) bool { return target == ErrMisconfigured }
