package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/backoff"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/internal/sleep"
	"github.com/heraldhq/herald/store"
)

// The wait between tries to open a database that is down at start: short
// enough that a store relays within about two seconds of its database
// coming up; a refused connection costs the database nothing.
var storeRetry = backoff.Policy{Initial: 500 * time.Millisecond, Max: 2 * time.Second}

// openWaiting opens the store (migrating its lanes' tables as allowed)
// and checks that every lane's table is as this build reads it. While the
// database cannot be reached it waits for it, on its own (logging once,
// trying again with a capped backoff, each failure recorded for /readyz):
// a relay started before its database comes up, as under an orchestrator,
// starts relaying when it does, and the other stores do not wait with it.
// Settings the server refuses and tables that need `herald migrate` are
// configuration errors (ConfigError: `herald run` exits 2), since waiting
// would not fix them; other errors fail at once. It returns nil, nil when
// ctx ends first.
func (s *storeRun) openWaiting(ctx context.Context, migrate bool) (*Runtime, error) {
	wait := backoff.Series{Policy: storeRetry}
	var began time.Time
	for {
		rt, err := s.tryOpen(ctx, migrate)
		switch {
		case err == nil:
			if !began.IsZero() {
				s.log.Info("database reachable; starting", slog.Duration("waited", time.Since(began).Round(time.Millisecond)))
			}
			return rt, nil
		case ctx.Err() != nil:
			return nil, nil
		case errors.Is(err, config.ErrInvalid):
			return nil, err
		case errors.Is(err, store.ErrMisconfigured) || errors.Is(err, store.ErrSchema):
			return nil, &ConfigError{fmt.Errorf("%s: %w", s.keyPath(), err)}
		case !(broker.Unreachable(err) || herald.IsUnavailable(err)):
			return nil, fmt.Errorf("%s: %w", s.keyPath(), err)
		}
		s.opening.Failed(err)
		if began.IsZero() {
			began = time.Now()
			s.log.Error("database unreachable at start; waiting for it", slog.String("error", err.Error()))
		}
		if !sleep.For(ctx, wait.Next()) {
			return nil, nil
		}
	}
}

// tryOpen opens the store once and checks its lanes' tables. Without
// migrations, a SQLite file that does not exist is refused rather than
// made empty.
func (s *storeRun) tryOpen(ctx context.Context, migrate bool) (*Runtime, error) {
	migrating := migrate && *s.file.Store.Migrate
	if !migrating {
		if err := CheckDatabaseExists(s.file.Store); err != nil {
			return nil, err
		}
	}
	rt, err := OpenStore(ctx, s.file, migrate)
	if err != nil {
		return nil, err
	}
	if err := rt.CheckMigrated(ctx); err != nil {
		rt.Close()
		return nil, err
	}
	return rt, nil
}
