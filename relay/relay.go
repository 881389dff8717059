package relay

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/heraldhq/herald/store"
)

// Relay runs every configured lane's workers and maintenance.
type Relay struct {
	cfg      Config
	breakers map[string]*breaker // by lane name
	state    *laneState
}

// New validates cfg and returns a Relay, or an error naming what is wrong.
func New(cfg Config) (*Relay, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Relay{cfg: cfg, breakers: newBreakers(cfg), state: newLaneState(cfg)}
	for _, b := range r.breakers {
		b.changed = r.state.report
	}
	return r, nil
}

// Health is where the relay keeps its brokers' and database's state
// (Config.Health, or its own).
func (r *Relay) Health() *Health { return r.cfg.Health }

// Run relays until ctx is cancelled, then shuts down gracefully: no new
// claims, in-flight publishes finish within their publish_timeout, their
// outcomes are marked and unpublished rows released. It returns nil after a
// clean shutdown. Tables must exist before Run (Store.Migrate, or
// store.MigrateFor the lanes' TableUse where an ordered, tenant or fair
// lane reads them): Run refuses a lane whose table lacks an index its
// claims read (store.ErrMissingIndex) before any lane starts.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	// Pauses are known before the first claim; each broker's state is
	// written at start, so a report left by a relay that died mid-outage
	// does not stand.
	r.state.read(ctx)
	for _, b := range r.breakers {
		r.state.report(b.status())
	}
	// A lane that cannot start stops the lanes started before it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := r.checkIndexes(ctx); err != nil {
		return err
	}
	for _, lane := range r.cfg.Lanes {
		log := r.cfg.Logger.With(slog.String("lane", lane.Name), slog.String("node", r.cfg.Node))
		wakeups, stop, err := r.startLane(ctx, lane, log, wg.Go)
		if err != nil {
			cancel()
			wg.Wait()
			return err
		}
		defer stop()
		for _, w := range r.workers(lane, wakeups, log) {
			wg.Go(func() { w.run(ctx) })
		}
		if lane.Retention.Enabled() {
			m := &maintainer{store: r.cfg.Store, lane: lane, log: log}
			wg.Go(func() { m.run(ctx) })
		}
		log.Info("lane started", slog.String("table", lane.Table), slog.Int("workers", lane.Concurrency),
			slog.String("ordering", string(lane.Ordering)), slog.String("source", string(lane.Source)))
	}
	wg.Go(func() { r.state.run(ctx) })
	wg.Go(func() { pingAtStart(ctx, r.breakers) })
	wg.Wait()
	r.cfg.Logger.Info("relay stopped", slog.String("node", r.cfg.Node))
	return nil
}

// checkIndexes refuses lanes whose tables lack an index their claims read
// (store.UseIndexer: MySQL tables carry the ordered and tenant indexes only
// for lanes that read them), before any lane starts: otherwise the lane's
// every claim would fail.
func (r *Relay) checkIndexes(ctx context.Context) error {
	for _, lane := range r.cfg.Lanes {
		if err := store.CheckIndexes(ctx, r.cfg.Store, lane.Table, lane.TableUse(), fmt.Sprintf("lane %q", lane.Name)); err != nil {
			return fmt.Errorf("relay: %w", err)
		}
	}
	return nil
}

// workers makes a lane's workers: Concurrency of them, and on a fair
// lane one more, the express worker of its quiet tenants (express.go).
func (r *Relay) workers(lane Lane, wakeups *fanout, log *slog.Logger) []*worker {
	var busy *busyTenants
	n := lane.Concurrency
	if lane.FairTenants && lane.Source != SourceLog {
		busy = newBusyTenants()
		n++
	}
	var ws []*worker
	lastTurn := new(atomic.Int64)
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("%s/%s-%02d", r.cfg.Node, lane.Name, i)
		if i > lane.Concurrency {
			id = fmt.Sprintf("%s/%s-express", r.cfg.Node, lane.Name)
		}
		w := newWorker(r.cfg, lane, id, wakeups.subscribe(), log)
		w.breaker, w.paused = r.breakers[lane.Name], r.state.paused[lane.Name]
		w.busy, w.express = busy, i > lane.Concurrency
		if lane.Source == SourceLog {
			// Its handed-over rows are few: polled, not woken by
			// every commit of the table.
			w.notified, w.lastTurn = false, lastTurn
		}
		ws = append(ws, w)
	}
	return ws
}

// startLane subscribes a polling lane to its table's wakeups, or starts a
// log lane's reader (whose polling workers get no wakeups).
func (r *Relay) startLane(ctx context.Context, lane Lane, log *slog.Logger, start func(func())) (*fanout, func(), error) {
	if lane.Source == SourceLog {
		return &fanout{}, func() {}, r.startLogLane(ctx, lane, log, start)
	}
	wake, stop, err := subscribeWakeups(ctx, r.cfg.Store, lane.Table)
	if err != nil {
		return nil, nil, fmt.Errorf("relay: lane %q: wakeups: %w", lane.Name, err)
	}
	return wake, stop, nil
}
