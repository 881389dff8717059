package store

import (
	"context"
	"errors"
	"time"
)

// ErrLogUnavailable is wrapped by LogReader.CheckLog when the database
// cannot serve log lanes; the message names the setting to change.
var ErrLogUnavailable = errors.New("the database log is not available to Herald")

// ErrLogLeaseHeld is returned by OpenLog while another reader holds the
// lane's lease: the caller stands by and tries again.
var ErrLogLeaseHeld = errors.New("another reader holds the log lane's lease")

// ErrLogLeaseLost is returned by a stream whose lease another reader took
// (this reader was too slow to renew it): it must stop reading.
var ErrLogLeaseLost = errors.New("the log lane's lease was lost")

// ErrLogPositionLost is returned when the recorded position can no longer be
// read (the slot was dropped or invalidated): relaying on from anywhere else
// would skip events, so the lane stops until an operator recovers it
// (docs/loglanes.md).
var ErrLogPositionLost = errors.New("the log lane's position no longer exists")

// LogReader is an optional Store ability: lanes that read committed events
// from the database's log instead of claiming rows (docs/loglanes.md).
// Without it a lane with `source: log` is refused (relay.New).
type LogReader interface {
	// CheckLog returns nil when the database can serve log lanes, else an
	// error wrapping ErrLogUnavailable that names the setting to change.
	CheckLog(ctx context.Context) error
	// LogRequirements describes, one line each, what log lanes need of the
	// database, with its current values where it can read them.
	LogRequirements(ctx context.Context) []string
	// OpenLog takes the lane's lease (or returns ErrLogLeaseHeld) and starts
	// reading at the lane's recorded position, creating the lane's
	// position, publication and slot the first time.
	OpenLog(ctx context.Context, p LogParams) (LogStream, error)
	// HandOver writes failed log events to their rows for the lane's
	// polling workers (ClaimParams.HandedOver): retried after f.RetryIn, or
	// dead when dead is set. Events without a row (ID 0) get one.
	HandOver(ctx context.Context, table, lane string, fs []LogFailure) error
	// ApplyMarks marks delivered the rows that Record journaled for the
	// lane (or deletes them, when deleteRows), up to limit batches, and
	// says what it did with each row. A journal entry leaves only with its
	// row marked, or with the row found settled another way or gone (both
	// counted). Safe to run from several processes at once.
	ApplyMarks(ctx context.Context, table, lane string, limit int, deleteRows bool) (MarksApplied, error)
	// Strays hands to the lane's polling workers the rows of scope that the
	// log has passed but that are neither marked nor journaled nor handed
	// over: rows a defect or an operator's hand left pending with no
	// owner, which nothing else would ever publish or mark. It works in two
	// steps across calls: a call samples (up to limit) pending rows without
	// an owner and the log's end, and returns them in the probe; a later
	// call with that probe, once the lane's recorded position has reached
	// the sampled end (every transaction visible at the sample is then
	// settled), hands over those still stranded, returns them and samples
	// anew. Before the position gets there it returns the probe unchanged.
	Strays(ctx context.Context, lane string, sc Scope, probe StrayProbe, limit int) (StrayProbe, []int64, error)
	// HandedOverKeys returns the partition keys (tenant, key) of scope that
	// have handed-over rows not finished: pending or in flight, or dead
	// when parkOnDead.
	HandedOverKeys(ctx context.Context, lane string, s Scope, parkOnDead bool) ([][2]string, error)
	// ResetLog forgets what the lane keeps in the database, so that its
	// next start is a first start (docs/loglanes.md, "Starting a lane
	// anew"): it applies the lane's journaled marks (deleting the rows
	// when deleteRows), gives up its place in the log (PostgreSQL's slot)
	// and deletes its position and journal, in one transaction. While a
	// reader holds the lane's lease (or, on PostgreSQL, still reads its
	// slot) it changes nothing and returns an error wrapping
	// ErrLogLeaseHeld.
	ResetLog(ctx context.Context, lane string, deleteRows bool) (LogReset, error)
}

// LogReset is what one LogReader.ResetLog did.
type LogReset struct {
	// Recorded says whether the lane had a position recorded; Table is
	// the table it read.
	Recorded bool
	Table    string
	// Marks is what applying the lane's journal did.
	Marks MarksApplied
	// Released names what the database kept of the lane's place in the log
	// and no longer does ("slot herald_main"); empty when it kept nothing.
	Released []string
}

// MarksApplied is what one LogReader.ApplyMarks did.
type MarksApplied struct {
	// Batches is how many journaled batches it took (and removed).
	Batches int
	// Marked counts rows marked delivered (or deleted, on lanes that
	// delete).
	Marked int
	// Settled counts rows found already settled another way: handed over
	// to the polling workers, delivered or dead (a batch read again after
	// a restart, or marked twice).
	Settled int
	// Gone counts rows no longer in the table when their mark came
	// (deleted by hand or by retention before the mark).
	Gone int
}

// StrayProbe is LogReader.Strays' sample: the ids of pending rows without
// an owner, and the log's end read after them. The zero probe asks for a
// first sample.
type StrayProbe struct {
	IDs    []int64
	LogEnd uint64
}

// LogParams opens a lane's stream.
type LogParams struct {
	Scope
	// Lane names the lane: its position row, lease and slot.
	Lane string
	// Owner identifies this reader in the lease; unique per process.
	Owner string
	// Lease is how long the lease lasts unless renewed.
	Lease time.Duration
	// LeaveDelivered leaves a mapped table's delivered rows in their
	// pending status for the table's own retention (on_delivered: leave);
	// without it Record marks them delivered (docs/adopt.md).
	LeaveDelivered bool
}

// LogFailure is one log event handed over to the row path.
type LogFailure struct {
	Record Record
	// Error is the failure's text; empty for events handed over unpublished
	// (their key is parked behind a failed one).
	Error string
	// Attempted is set when the event was published and failed.
	Attempted bool
	// RetryIn is when the row becomes claimable.
	RetryIn time.Duration
	// Dead moves the row to dead at once.
	Dead bool
}

// LogBatch is the events of one or more whole committed transactions, in
// commit order, and the position after them.
type LogBatch struct {
	// Records are the events; a logical message's has ID 0.
	Records []Record
	// End is the position to commit once every event is settled.
	End uint64
}

// LogStream reads one lane's log. Next and Close are used by one
// goroutine; Record may run on another, beside Next, so that writing one
// batch's position overlaps reading and publishing the next.
type LogStream interface {
	// Next returns the next batch: whole transactions, at least one event
	// unless wait passed first (then an empty batch, which may still move
	// End past transactions with no events of the lane), ending after the
	// transaction that reaches limit events. It also confirms to the
	// database what Record recorded, and renews the lease while idle.
	Next(ctx context.Context, limit int, wait time.Duration) (LogBatch, error)
	// Record journals the delivered rows (for LogReader.ApplyMarks) and
	// records that everything up to end is settled, in one transaction
	// fenced by the lease (ErrLogLeaseLost if another reader took it): a
	// position never passes rows that will not be marked. A store whose log
	// can show a transaction before its rows are visible to other sessions
	// (PostgreSQL) first waits until they are, so that the marks find them.
	// Only then may the database's log be released up to end (Next does
	// that).
	Record(ctx context.Context, end uint64, delivered []Delivery) error
	// Close ends the stream and gives up the lease.
	Close() error
}
