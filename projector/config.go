package projector

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/backoff"
	"github.com/heraldhq/herald/projection"
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

// Settings are the projector's settings with their defaults and rules,
// declared once in package projection, which a config file's
// `projections` entries embed too.
type Settings = projection.Settings

// Config configures a Projector: its Settings, and what runs them.
type Config struct {
	// Settings: the name (required), table, type filters, workers,
	// batch sizes, lease, attempts, backoff, sweep and retention.
	Settings
	// Store keeps the bookkeeping next to the read model. Required.
	Store store.ProjectionStore
	// Handler applies one event. Required.
	Handler Handler
	// Statements, when set, returns the statements Handler would run for
	// an event (or the error it would return before running any): on a
	// store that can send them without waiting for each answer
	// (store.StatementApplier: PostgreSQL), a batch is applied from them in
	// one round trip instead of through Handler. It must describe exactly
	// what Handler does. Optional; package sqlproj sets it.
	Statements func(ev herald.Event) ([]store.Stmt, error)
	// Reset clears the read model for Rebuild. Optional.
	Reset ResetFunc
	// Logger receives failures and dead events. Defaults to slog.Default().
	Logger *slog.Logger
	// Observer is told of applied and failed events (metrics). Defaults to
	// none.
	Observer Observer
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	c.Settings = c.Settings.WithDefaults()
	if c.Observer == nil {
		c.Observer = noObserver{}
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
	case c.Store == nil:
		return fmt.Errorf("%w: Store is nil", ErrConfig)
	case c.Handler == nil:
		return fmt.Errorf("%w: Handler is nil", ErrConfig)
	}
	if err := c.Settings.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}
