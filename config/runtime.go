package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/sqlite"
)

// Runtime is what a config file describes, opened: the store, and (after
// StartBrokers) the brokers and the relay's lanes. Close releases it all.
type Runtime struct {
	File  *File
	Store store.Store
	// Lanes are the relay lanes, set by StartBrokers.
	Lanes []relay.Lane
	// Endpoints describes where each broker is reached, for `herald run` to
	// print (embedded servers above all).
	Endpoints map[string]string
	// NATSURLs is the client URL of each nats broker, set by StartBrokers:
	// the configured url, or the address an embedded server actually
	// listens on (chosen at start when its port is -1). Programs use it to
	// connect consumers (a projector's subscriber) to the same server. It
	// may hold credentials: do not log it.
	NATSURLs map[string]string
	closers  []func() error
}

// OpenStore opens the configured store (and migrates every lane's table
// when store.migrate is on and migrate is true).
func OpenStore(ctx context.Context, f *File, migrate bool) (*Runtime, error) {
	s, err := openStore(ctx, f.Store)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{File: f, Store: s, Endpoints: map[string]string{}, NATSURLs: map[string]string{}}
	rt.closers = append(rt.closers, s.Close)
	if migrate && *f.Store.Migrate {
		if err := rt.Migrate(ctx); err != nil {
			rt.Close()
			return nil, err
		}
	}
	return rt, nil
}

// Migrate creates or upgrades every lane's table.
func (rt *Runtime) Migrate(ctx context.Context) error {
	done := map[string]bool{}
	for _, l := range rt.File.Lanes {
		if done[l.Table] {
			continue
		}
		done[l.Table] = true
		if err := rt.Store.Migrate(ctx, l.Table); err != nil {
			return fmt.Errorf("migrate %s: %w", l.Table, err)
		}
	}
	return nil
}

func openStore(ctx context.Context, c Store) (store.Store, error) {
	d, err := herald.ParseDialect(c.Driver)
	if err != nil {
		return nil, fmt.Errorf("%w: store.driver: %v", ErrInvalid, err)
	}
	switch d {
	case herald.SQLite:
		return sqlite.Open(ctx, c.DSN, sqlite.Options{SynchronousNormal: c.Synchronous == "normal"})
	default:
		return openServerStore(ctx, d, c.DSN)
	}
}

// Lane returns the configured lane named name, or the first lane when name
// is empty.
func (f *File) Lane(name string) (*Lane, error) {
	if name == "" {
		return &f.Lanes[0], nil
	}
	for i := range f.Lanes {
		if f.Lanes[i].Name == name {
			return &f.Lanes[i], nil
		}
	}
	var names []string
	for _, l := range f.Lanes {
		names = append(names, l.Name)
	}
	return nil, fmt.Errorf("%w: no lane %q (configured: %v)", ErrInvalid, name, names)
}

// Outbox returns an Outbox for lane l's table that refuses payloads the
// lane or its broker would (File.PayloadLimit).
func (rt *Runtime) Outbox(l *Lane) (*herald.Outbox, error) {
	return herald.NewOutbox(herald.OutboxConfig{Table: l.Table, Dialect: rt.Store.Dialect(), MaxPayload: rt.File.PayloadLimit(l)})
}

// StartBrokers starts embedded servers, connects every broker the lanes
// use and builds the relay lanes.
func (rt *Runtime) StartBrokers(ctx context.Context, log *slog.Logger) error {
	pubs := map[string]broker.Publisher{}
	for _, l := range rt.File.Lanes {
		if _, ok := pubs[l.Broker]; ok {
			continue
		}
		p, err := rt.startBroker(ctx, l.Broker, rt.File.Brokers[l.Broker], log)
		if err != nil {
			return fmt.Errorf("broker %s: %w", l.Broker, err)
		}
		pubs[l.Broker] = p
	}
	for _, l := range rt.File.Lanes {
		rt.Lanes = append(rt.Lanes, l.relayLane(pubs[l.Broker]))
	}
	return nil
}

func (l *Lane) relayLane(p broker.Publisher) relay.Lane {
	return relay.Lane{
		Name: l.Name, Table: l.Table, Tenant: l.Tenant,
		IncludeTypes: l.IncludeTypes, ExcludeTypes: l.ExcludeTypes,
		Publisher: p, Broker: l.Broker, Destination: broker.MustParseTemplate(l.Destination), // validated at load
		Ordering: relay.Ordering(l.Ordering), OnDead: relay.OnDead(l.OnDead), MaxPayload: l.MaxPayload,
		Concurrency: l.Concurrency, BatchSize: l.BatchSize,
		PollInterval: l.PollInterval.D(), PublishTimeout: l.PublishTimeout.D(), Lease: l.Lease.D(),
		Retry: relay.Retry{Initial: l.Retry.Initial.D(), Max: l.Retry.Max.D(),
			MaxAttempts: l.Retry.MaxAttempts, Jitter: relay.Jitter(l.Retry.Jitter)},
		DiscardAfter: l.DiscardAfter.D(), Source: relay.Source(l.Source),
		Retention: relay.Retention{Delivered: l.Retention.Delivered.D(), Dead: l.Retention.Dead.D(),
			Active: l.Retention.Active.D(), Interval: l.Retention.Interval.D(), BatchSize: l.Retention.BatchSize},
	}
}

// Close releases brokers, embedded servers and the store, in reverse order.
func (rt *Runtime) Close() error {
	var errs []error
	for i := len(rt.closers) - 1; i >= 0; i-- {
		errs = append(errs, rt.closers[i]())
	}
	rt.closers = nil
	return errors.Join(errs...)
}
