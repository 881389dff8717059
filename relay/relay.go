package relay

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// Relay runs every configured lane's workers and maintenance.
type Relay struct {
	cfg      Config
	breakers map[string]*breaker // by lane name
}

// New validates cfg and returns a Relay, or an error naming what is wrong.
func New(cfg Config) (*Relay, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Relay{cfg: cfg, breakers: newBreakers(cfg)}, nil
}

// Health is where the relay keeps its brokers' and database's state
// (Config.Health, or its own).
func (r *Relay) Health() *Health { return r.cfg.Health }

// Run relays until ctx is cancelled, then shuts down gracefully: no new
// claims, in-flight publishes finish within their publish_timeout, their
// outcomes are marked and unpublished rows released. It returns nil after a
// clean shutdown. Tables must exist (Store.Migrate) before Run.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, lane := range r.cfg.Lanes {
		wake, stop, err := subscribeWakeups(ctx, r.cfg.Store, lane.Table)
		if err != nil {
			return fmt.Errorf("relay: lane %q: wakeups: %w", lane.Name, err)
		}
		defer stop()
		log := r.cfg.Logger.With(slog.String("lane", lane.Name), slog.String("node", r.cfg.Node))
		for i := 1; i <= lane.Concurrency; i++ {
			w := newWorker(r.cfg, lane, fmt.Sprintf("%s/%s-%02d", r.cfg.Node, lane.Name, i), wake.subscribe(), log)
			w.breaker = r.breakers[lane.Name]
			wg.Go(func() { w.run(ctx) })
		}
		if lane.Retention.enabled() {
			m := &maintainer{store: r.cfg.Store, lane: lane, log: log}
			wg.Go(func() { m.run(ctx) })
		}
		log.Info("lane started", slog.String("table", lane.Table), slog.Int("workers", lane.Concurrency),
			slog.String("ordering", string(lane.Ordering)))
	}
	wg.Wait()
	r.cfg.Logger.Info("relay stopped", slog.String("node", r.cfg.Node))
	return nil
}
