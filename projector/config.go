package projector

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/backoff"
	"github.com/heraldhq/herald/store"
)

// Handler updates a read model for one event inside the transaction the
// projector opened. It must do all its work through tx (anything else is
// not rolled back with it) and may run again for the same event after a
// rollback (a failure, a lost deadlock). Return herald.Permanent(err) for
// input no retry can fix (a bad payload): the event goes dead at once.
type Handler func(ctx context.Context, tx *sql.Tx, ev herald.Event) error

// ResetFunc clears a read model, inside the transaction that deletes the
// projection's bookkeeping, for a rebuild.
type ResetFunc func(ctx context.Context, tx *sql.Tx) error

// Backoff is the wait before retrying a failed event: exponential from
// Initial (default 1s), capped at Max (default 1m), with equal jitter unless
// Jitter says otherwise. It is the relay's backoff.Policy.
type Backoff = backoff.Policy

// Config configures a Projector.
type Config struct {
	// Name is the projection's name, the first part of its dedupe key.
	// Required; at most 64 bytes.
	Name string
	// Store keeps the bookkeeping next to the read model. Required.
	Store store.ProjectionStore
	// Table is the projection table. Defaults to store.DefaultProjectionTable.
	Table string
	// Handler applies one event. Required.
	Handler Handler
	// Reset clears the read model for Rebuild. Optional.
	Reset ResetFunc
	// Workers is the number of events applied at once. Events of one
	// partition key always go to the same worker, in the order received.
	// Defaults to 4.
	Workers int
	// BatchSize is the most messages taken from the source at once.
	// Defaults to 64.
	BatchSize int
	// ApplyBatch is the most events of one worker applied in one
	// transaction (each under a savepoint): one commit, so one fsync, for
	// all of them. 1 applies one event per transaction. Defaults to 32.
	ApplyBatch int
	// Lease bounds a claim: a processing row older than this may be taken
	// over. Defaults to 1m.
	Lease time.Duration
	// MaxAttempts moves an event to dead after this many failures.
	// Defaults to 10.
	MaxAttempts int
	// Backoff spaces retries of a failing event.
	Backoff Backoff
	// SweepInterval is how often failed events kept in the table (replayed
	// dead events, failures of a crashed worker) are retried. Defaults to 5s.
	SweepInterval time.Duration
	// DoneRetention deletes done rows older than this: the dedupe horizon.
	// A redelivery older than the horizon would be applied again (see
	// docs/projector.md). Zero, the default, keeps them forever.
	DoneRetention time.Duration
	// IncludeTypes, when not empty, limits the projection to these event
	// types; ExcludeTypes leaves these out (applied after IncludeTypes).
	// Any other event is acked as it comes, without a handler call or a
	// projection row: a shared topic's foreign events leave no trace. An
	// OutboxSource should get the same filters in its Scope, or its scans
	// keep meeting the foreign rows.
	IncludeTypes, ExcludeTypes []string
	// EventFrom takes the event's id, type, tenant, key and time from the
	// message body (a JSONPath) or named headers instead of Herald's
	// CloudEvents attributes, so that messages another producer published
	// (an existing service's own outbox worker) and Herald's share one
	// ledger. A message whose configured attribute is missing goes dead at
	// once with the reason naming it. Defaults to none: Herald's headers.
	EventFrom EventFrom
	// Logger receives failures and dead events. Defaults to slog.Default().
	Logger *slog.Logger
	// Observer is told of applied and failed events (metrics). Defaults to
	// none.
	Observer Observer
}

// wants reports whether the projection applies events of type t.
func (c Config) wants(t string) bool {
	if len(c.IncludeTypes) > 0 && !slices.Contains(c.IncludeTypes, t) {
		return false
	}
	return !slices.Contains(c.ExcludeTypes, t)
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.Table == "" {
		c.Table = store.DefaultProjectionTable
	}
	if c.Observer == nil {
		c.Observer = noObserver{}
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 64
	}
	if c.ApplyBatch <= 0 {
		c.ApplyBatch = 32
	}
	if c.Lease <= 0 {
		c.Lease = time.Minute
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 10
	}
	if c.Backoff.Initial <= 0 {
		c.Backoff.Initial = time.Second
	}
	if c.Backoff.Max <= 0 {
		c.Backoff.Max = time.Minute
	}
	c.Backoff.Max = max(c.Backoff.Max, c.Backoff.Initial)
	if c.Backoff.Jitter == "" {
		c.Backoff.Jitter = backoff.JitterEqual
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("projector: invalid config")

func (c Config) validate() error {
	switch {
	case c.Name == "":
		return fmt.Errorf("%w: Name is empty", ErrConfig)
	case len(c.Name) > 64:
		return fmt.Errorf("%w: Name %q is longer than 64 bytes", ErrConfig, c.Name)
	case c.Store == nil:
		return fmt.Errorf("%w: Store is nil", ErrConfig)
	case c.Handler == nil:
		return fmt.Errorf("%w: Handler is nil", ErrConfig)
	case c.DoneRetention < 0:
		return fmt.Errorf("%w: DoneRetention %v is negative", ErrConfig, c.DoneRetention)
	}
	if err := herald.ValidateIdentifier(c.Table); err != nil {
		return fmt.Errorf("%w: Table: %v", ErrConfig, err)
	}
	for name, types := range map[string][]string{"IncludeTypes": c.IncludeTypes, "ExcludeTypes": c.ExcludeTypes} {
		if i := slices.Index(types, ""); i >= 0 {
			return fmt.Errorf("%w: %s[%d] is empty", ErrConfig, name, i)
		}
	}
	return nil
}
