package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// Runtime is what a config file describes, opened: the store, and (after
// StartBrokers) the brokers and the relay's lanes. Close releases it all.
type Runtime struct {
	File  *config.File
	Store store.Store
	// Lanes are the relay lanes, set by StartBrokers.
	Lanes []relay.Lane
	// Endpoints describes where each broker is reached, for `herald run` to
	// print (embedded servers above all).
	Endpoints map[string]string
	// ClientURLs is the client URL of each broker that has one (nats), set
	// by StartBrokers: the configured url, or the address an embedded
	// server actually listens on (chosen at start when its port is -1).
	// Programs use it to connect consumers (a projector's subscriber) to
	// the same server. It may hold credentials: do not log it.
	ClientURLs map[string]string
	closers    []func() error
}

// OpenStore opens the configured store (and migrates every lane's table
// when store.migrate is on and migrate is true).
func OpenStore(ctx context.Context, f *config.File, migrate bool) (*Runtime, error) {
	s, err := openStore(ctx, f.Store)
	if err != nil {
		return nil, err
	}
	if err := mapTables(s, f.Lanes); err != nil {
		s.Close()
		return nil, err
	}
	rt := &Runtime{File: f, Store: s, Endpoints: map[string]string{}, ClientURLs: map[string]string{}}
	rt.closers = append(rt.closers, s.Close)
	if migrate && *f.Store.Migrate {
		if err := rt.Migrate(ctx); err != nil {
			rt.Close()
			return nil, err
		}
	}
	return rt, nil
}

// Migrate creates or upgrades every lane's table, with the indexes its
// lanes' claims read (store.MigrateFor; the union over the lanes sharing
// a table).
func (rt *Runtime) Migrate(ctx context.Context) error {
	uses := map[string]store.TableUse{}
	var tables []string
	for _, l := range rt.File.Lanes {
		if _, ok := uses[l.Table]; !ok {
			tables = append(tables, l.Table)
		}
		uses[l.Table] = uses[l.Table].Union(l.TableUse())
	}
	for _, t := range tables {
		if err := store.MigrateFor(ctx, rt.Store, t, uses[t]); err != nil {
			return mappingLane(rt.File.Lanes, t, fmt.Errorf("migrate %s: %w", t, err))
		}
	}
	return nil
}

// Outbox returns an Outbox for lane l's table that refuses payloads the
// lane or its broker would (File.PayloadLimit).
func (rt *Runtime) Outbox(l *config.Lane) (*herald.Outbox, error) {
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
		p, err := rt.openBroker(ctx, broker.OpenEnv{Name: l.Broker, Logger: log}, rt.File.Brokers[l.Broker])
		var ce *broker.ConfigError
		if errors.As(err, &ce) {
			return fmt.Errorf("%w: brokers.%s.%s", config.ErrInvalid, l.Broker, ce.Error())
		}
		if err != nil {
			return fmt.Errorf("broker %s: %w", l.Broker, err)
		}
		log.Debug("broker opened", slog.String("broker", l.Broker))
		pubs[l.Broker] = p
	}
	for _, l := range rt.File.Lanes {
		l.Publisher = pubs[l.Broker]
		rt.Lanes = append(rt.Lanes, l)
	}
	return nil
}

// BrokerRuntime returns a Runtime of f that holds no store: its
// StartBrokers opens once each broker that f's lanes use, in whichever
// store, for the runtimes of several stores to share (UseBrokers).
func BrokerRuntime(f *config.File) *Runtime {
	return &Runtime{File: f, Endpoints: map[string]string{}, ClientURLs: map[string]string{}}
}

// UseBrokers gives rt's lanes their publishers from b, a started
// BrokerRuntime, and rt b's endpoints and client URLs; b keeps (and
// closes) the brokers.
func (rt *Runtime) UseBrokers(b *Runtime) {
	pubs := map[string]relay.Lane{}
	for _, l := range b.Lanes {
		pubs[l.Name] = l
	}
	rt.Lanes = nil
	for _, l := range rt.File.Lanes {
		l.Publisher = pubs[l.Name].Publisher
		rt.Lanes = append(rt.Lanes, l)
	}
	rt.Endpoints, rt.ClientURLs = b.Endpoints, b.ClientURLs
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

// openStore opens the configured store.
func openStore(ctx context.Context, s config.Store) (store.Store, error) {
	if s.Config == nil {
		return nil, fmt.Errorf("%w: store.driver: unknown database driver %q", config.ErrInvalid, s.Driver)
	}
	return s.Config.Open(ctx, s.DSN)
}

// openBroker connects the broker and registers its release with rt.
func (rt *Runtime) openBroker(ctx context.Context, env broker.OpenEnv, b *config.Broker) (broker.Publisher, error) {
	o, err := b.Config.Open(ctx, env)
	if err != nil {
		return nil, err
	}
	closeFn := o.Close
	if closeFn == nil {
		closeFn = o.Publisher.Close
	}
	rt.closers = append(rt.closers, closeFn)
	rt.Endpoints[env.Name] = o.Endpoint
	if o.ClientURL != "" {
		rt.ClientURLs[env.Name] = o.ClientURL
	}
	return o.Publisher, nil
}
