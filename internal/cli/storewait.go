package cli

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/internal/sleep"
)

// The wait between tries to open a database that is down at start.
const (
	storeRetryInitial = 500 * time.Millisecond
	storeRetryMax     = 10 * time.Second
)

// openStoreWaiting opens the store, and when the database cannot be
// reached waits for it (logging once, trying again with a capped backoff)
// instead of failing: a relay started before its database comes up, as
// under an orchestrator, starts relaying when it does. Other errors (bad
// config, refused credentials) fail at once.
func openStoreWaiting(ctx context.Context, f *config.File, migrate bool, log *slog.Logger) (*config.Runtime, error) {
	wait := storeRetryInitial
	var began time.Time
	for {
		rt, err := config.OpenStore(ctx, f, migrate)
		if err == nil {
			if !began.IsZero() {
				log.Info("database reachable; starting", slog.Duration("waited", time.Since(began).Round(time.Millisecond)))
			}
			return rt, nil
		}
		if errors.Is(err, config.ErrInvalid) || !(broker.Unreachable(err) || herald.IsUnavailable(err)) {
			return nil, err
		}
		if began.IsZero() {
			began = time.Now()
			log.Error("database unreachable at start; waiting for it", slog.String("error", err.Error()))
		}
		if !sleep.For(ctx, wait) {
			return nil, err
		}
		wait = min(wait*2, storeRetryMax)
	}
}
