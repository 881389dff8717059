package cli

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/relay"
)

// storeRun is one store of `herald run`: its runtime, the health its
// relay keeps (each store's outage and its brokers' breakers are its
// own), and its logger.
type storeRun struct {
	name   string
	rt     *config.Runtime
	health *relay.Health
	log    *slog.Logger
}

// openStores opens (and migrates, as allowed) each store's part of the
// config, waiting for a database that is down at start. With several
// stores, each one's log lines carry its name. The stores opened so far
// are returned with an error, for closeStores.
func openStores(ctx context.Context, files []*config.File, migrate bool, log *slog.Logger) ([]*storeRun, error) {
	var out []*storeRun
	for _, f := range files {
		l := log
		if len(files) > 1 {
			l = log.With(slog.String("store", f.StoreName()))
		}
		rt, err := openStoreWaiting(ctx, f, migrate, l)
		if err != nil {
			return out, err
		}
		out = append(out, &storeRun{name: f.StoreName(), rt: rt, health: relay.NewHealth(), log: l})
	}
	return out, nil
}

// closeStores closes every store's runtime.
func closeStores(stores []*storeRun) {
	for _, s := range stores {
		s.rt.Close()
	}
}

// newRelays builds one relay per store that has lanes: a relay claims
// from one database, so each store's leases, fencing, wakeups and outage
// handling stay its own.
func newRelays(stores []*storeRun, node string, obs relay.Observer, tp trace.TracerProvider) ([]*relay.Relay, error) {
	var out []*relay.Relay
	for _, s := range stores {
		if len(s.rt.Lanes) == 0 {
			continue // a store only projections use
		}
		r, err := relay.New(relay.Config{Store: s.rt.Store, Lanes: s.rt.Lanes, Node: node, Logger: s.log,
			Observer: obs, TracerProvider: tp, Health: s.health})
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// runRelays runs every relay until ctx ends; one that fails (a lane that
// cannot start) stops the others, and its error is returned.
func runRelays(ctx context.Context, relays []*relay.Relay) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(relays))
	var wg sync.WaitGroup
	for i, r := range relays {
		wg.Go(func() {
			if errs[i] = r.Run(ctx); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
