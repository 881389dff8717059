package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// EventQuery selects rows of one scope, for search and for replay by
// query. Every set field narrows the selection; the times bound
// created_at, the event's commit.
type EventQuery struct {
	// Scope is the lane's table and filters (Tenant narrows to one tenant).
	Scope
	// Statuses, when not empty, keep only rows in these states. A replay
	// takes only StatusDelivered and StatusDead.
	Statuses []Status
	// Types, Keys and EventIDs, when not empty, keep only these event
	// types, partition keys and event ids.
	Types    []string
	Keys     []string
	EventIDs []string
	// RowIDs, when not empty, keeps only these row ids (what became of the
	// rows a replay took).
	RowIDs []int64
	// Since and Until, when not zero, keep events created at or after Since
	// and before Until.
	Since, Until time.Time
	// NewestFirst makes FindEvents return rows in descending id order,
	// below its bound (an operator's list shows the latest events first).
	NewestFirst bool
}

// Validate says what is wrong with q, naming the field.
func (q EventQuery) Validate() error {
	if q.Table == "" {
		return errors.New("query: no table")
	}
	for _, s := range q.Statuses {
		switch s {
		case StatusPending, StatusInFlight, StatusDelivered, StatusDead:
		default:
			return fmt.Errorf("query: statuses: %q is not pending, in_flight, delivered or dead", s)
		}
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return fmt.Errorf("query: since %s is not before until %s", q.Since.Format(time.RFC3339), q.Until.Format(time.RFC3339))
	}
	return nil
}

// ValidateReplay is Validate, and that q names the states to replay: only
// delivered and dead rows can be replayed.
func (q EventQuery) ValidateReplay() error {
	if err := q.Validate(); err != nil {
		return err
	}
	if len(q.Statuses) == 0 {
		return errors.New("replay: statuses: name delivered, dead or both")
	}
	for _, s := range q.Statuses {
		if s != StatusDelivered && s != StatusDead {
			return fmt.Errorf("replay: statuses: %s rows cannot be replayed (only delivered and dead)", s)
		}
	}
	return nil
}

// ReplayBatch asks to replay the next rows of a query, in id order.
type ReplayBatch struct {
	Query EventQuery
	// AfterID continues a replay: only rows with a larger id.
	AfterID int64
	// Limit is the most rows this batch replays.
	Limit int
	// By says who replays (a person, "user@host", or the admin API's caller)
	// and Reason why; both go into each event's replay history.
	By, Reason string
}

// Replay is one entry of an event's replay history (herald_replays).
type Replay struct {
	Table   string
	EventID string
	// RowID is the row's id, which a replay keeps (and so its place in
	// per-key order).
	RowID int64
	// From is the state the row was replayed from.
	From Status
	// At is when, on the database clock.
	At         time.Time
	By, Reason string
}

// Replaying is part of every Store: search and replay by query (see
// QueryReplayer).
type Replaying interface {
	Replays() QueryReplayer
}

// QueryReplayer is search and replay by query, with a history of who replayed
// what in herald_replays (created by Migrate), and retry now. A replayed
// row keeps its id and event id: consumers dedupe it by event id, and an
// ordered lane publishes it in its original place among its key's
// unfinished rows.
type QueryReplayer interface {
	// CountEvents counts the rows q selects (a plain read).
	CountEvents(ctx context.Context, q EventQuery) (int64, error)
	// FindEvents returns up to limit rows q selects with ids above afterID,
	// in id order (a plain read, for search, dry runs and samples).
	FindEvents(ctx context.Context, q EventQuery, afterID int64, limit int) ([]Record, error)
	// ReplayNext moves up to b.Limit rows of b.Query with ids above
	// b.AfterID back to pending, claimable at once, attempts reset, and
	// records each in herald_replays, in one transaction. It returns the
	// ids of the rows it replayed, in id order (none: the query is done).
	ReplayNext(ctx context.Context, b ReplayBatch) ([]int64, error)
	// ReplayHistory returns the replays of eventID in table, oldest first.
	ReplayHistory(ctx context.Context, table, eventID string) ([]Replay, error)
	// RetryNow makes the scope's pending rows of eventIDs due at once (a
	// retry waiting out its backoff, or a delayed event), and returns how
	// many it changed. In-flight and finished rows are left alone.
	RetryNow(ctx context.Context, s Scope, eventIDs []string) (int64, error)
}
