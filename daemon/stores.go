package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/admin"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// storeRun is one store of `herald run`: its part of the config, the
// health its relay keeps (each store's outage and its brokers' breakers
// are its own), where the admin server finds it once open, and its logger.
type storeRun struct {
	name    string
	file    *config.File
	health  *relay.Health
	opening *admin.Opening
	log     *slog.Logger
}

// runEnv is what every store's run shares: the started brokers, whether
// to migrate, and the relays' node name, metrics observer and tracer.
type runEnv struct {
	brokers *Runtime
	migrate bool
	node    string
	obs     relay.Observer
	tp      trace.TracerProvider
	say     func(format string, args ...any)
}

// newStoreRuns makes one storeRun per store's part of the config. With
// several stores, each one's log lines carry its name.
func newStoreRuns(files []*config.File, log *slog.Logger) []*storeRun {
	out := make([]*storeRun, len(files))
	for i, f := range files {
		l := log
		if len(files) > 1 {
			l = log.With(slog.String("store", f.StoreName()))
		}
		out[i] = &storeRun{name: f.StoreName(), file: f, health: relay.NewHealth(), opening: admin.NewOpening(), log: l}
	}
	return out
}

// keyPath is the store's section in the config, for errors.
func (s *storeRun) keyPath() string {
	if s.name == config.DefaultStore {
		return "store"
	}
	return "stores." + s.name
}

// runStores runs every store on its own until ctx ends: each waits for
// its database with its own backoff, then starts its projections and its
// relay, so a store that is down at start holds up no other. A store that
// fails (settings refused, a table to migrate, a lane that cannot start)
// stops the others, and its error is returned.
func runStores(ctx context.Context, stores []*storeRun, env runEnv) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			if errs[i] = s.run(ctx, env); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// run opens the store (waiting for it), then runs its projections and its
// relay (one relay per store: a relay claims from one database, so each
// store's leases, fencing, wakeups and outage handling stay its own) until
// ctx ends.
func (s *storeRun) run(ctx context.Context, env runEnv) error {
	rt, err := s.openWaiting(ctx, env.migrate)
	if rt == nil {
		return err
	}
	defer rt.Close()
	s.opening.Opened(rt.Store)
	logAdvice(ctx, rt.Store, rt.File.Lanes, s.log)
	rt.UseBrokers(env.brokers)
	projections, err := rt.StartProjections(ctx, s.log, env.migrate)
	if err != nil {
		return err
	}
	pctx, stopProjections := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, p := range projections {
		if o, ok := env.obs.(projector.Observer); ok { // the admin metrics
			p.Projector.Observe(o)
		}
		env.say("projection %s running", p.Projector.Name())
		wg.Go(func() {
			if err := p.Projector.Run(pctx, p.Source); err != nil {
				s.log.Error("projection stopped", "projection", p.Projector.Name(), "err", err)
			}
		})
	}
	err = s.relay(ctx, rt, env)
	stopProjections()
	wg.Wait() // the projectors settle what they hold, then end
	return err
}

// relay runs the store's relay until ctx ends (a store only projections
// use waits for ctx instead).
func (s *storeRun) relay(ctx context.Context, rt *Runtime, env runEnv) error {
	if len(rt.Lanes) == 0 {
		<-ctx.Done()
		return nil
	}
	r, err := relay.New(relay.Config{Store: rt.Store, Lanes: rt.Lanes, Node: env.node, Logger: s.log,
		Observer: env.obs, TracerProvider: env.tp, Health: s.health})
	if err != nil {
		return fmt.Errorf("%w: %s: %v", config.ErrInvalid, s.keyPath(), err)
	}
	err = r.Run(ctx)
	if errors.Is(err, store.ErrLogUnavailable) || errors.Is(err, store.ErrMissingIndex) {
		// A setting of the database's to change, or an index to add
		// (`herald migrate`): a configuration error.
		return fmt.Errorf("%w: %s: %v", config.ErrInvalid, s.keyPath(), err)
	}
	return err
}
