package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/heraldhq/herald/admin"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/relay"
)

// Options are what Run takes besides the config file. The zero value runs
// as `herald run` does, logging to slog.Default().
type Options struct {
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// NoMigrate leaves the tables as they are at start (`herald run
	// --no-migrate`); otherwise each store migrates when its
	// `store.migrate` is on (the default).
	NoMigrate bool
	// Say receives the lines that say what was started and where (the
	// admin address, each broker's endpoint, each lane, tracing, each
	// projection). `herald run` prints them to stderr; nil logs them at
	// info level.
	Say func(format string, args ...any)
	// Collectors are registered beside the Go and process collectors on the
	// admin server's /metrics (`herald run` adds herald_build_info).
	Collectors []prometheus.Collector
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Say == nil {
		log := o.Logger
		o.Say = func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
	}
	return o
}

// ConfigError is an error of Run that waiting would not fix: settings the
// database refuses, a table that needs `herald migrate`. `herald run`
// exits 2 on it, as on an invalid file (whose errors wrap
// config.ErrInvalid).
type ConfigError struct{ Err error }

// Error is the store's error as it is (its key path included).
func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns the error of the store.
func (e *ConfigError) Unwrap() error { return e.Err }

// Run runs what f describes until ctx ends, as `herald run` does: first
// what needs no database (the admin server, so that probes answer from the
// first second; the brokers; tracing), then every store on its own: each
// waits for its database, migrates (unless NoMigrate or its
// `store.migrate` is off), checks its lanes' tables, then runs its
// projections and its relay. A store that fails stops the others, and
// Run returns its error; an error wrapping config.ErrInvalid or a
// ConfigError is the file's or the database's settings at fault.
//
// f is a parsed file (config.Load or config.Parse with the program's
// drivers), or a copy cut down to one store (File.ForStore: `herald run
// --store`).
func Run(ctx context.Context, f *config.File, opts Options) error {
	opts = opts.withDefaults()
	files := make([]*config.File, 0, len(f.StoreNames()))
	for _, name := range f.StoreNames() {
		sf, err := f.ForStore(name)
		if err != nil {
			return err
		}
		files = append(files, sf)
	}
	stores := newStoreRuns(files, opts.Logger)
	obs, stopAdmin, err := startAdmin(f, stores, opts)
	if err != nil {
		return err
	}
	defer stopAdmin()
	brokers := BrokerRuntime(f)
	defer brokers.Close()
	if err := brokers.StartBrokers(ctx, opts.Logger); err != nil {
		return err
	}
	announce(brokers, stores, opts.Say)
	tp, stopTracing, err := startTracing(ctx, f.Tracing, opts.Say)
	if err != nil {
		return err
	}
	defer stopTracing()
	err = runStores(ctx, stores, runEnv{brokers: brokers, migrate: !opts.NoMigrate, node: f.Node, obs: obs, tp: tp, say: opts.Say})
	opts.Logger.Info("herald stopped", slog.String("signal", fmt.Sprint(context.Cause(ctx))))
	return err
}

// startAdmin serves metrics and health on admin.addr (unless it is off)
// and returns the relays' metrics observer and a stop function.
func startAdmin(f *config.File, stores []*storeRun, opts Options) (relay.Observer, func(), error) {
	if f.Admin.Addr == config.AdminOff {
		return nil, func() {}, nil
	}
	lanes := make([]admin.StoreLanes, len(stores))
	for i, s := range stores {
		lanes[i] = admin.StoreLanes{Name: s.name, Opening: s.opening, Lanes: s.file.Lanes, Health: s.health,
			Projections: ProjectionRefs(s.file)}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(opts.Collectors...)
	m, err := admin.NewStoresMetrics(reg, lanes)
	if err != nil {
		return nil, nil, err
	}
	if err := admin.RegisterStoresHealth(reg, lanes); err != nil {
		return nil, nil, err
	}
	srv, err := admin.ListenStores(f.Admin.Addr, reg, lanes, admin.WithMetrics(m), admin.WithToken(f.Admin.Token))
	if err != nil {
		return nil, nil, fmt.Errorf("%w (admin.addr; %q turns it off)", err, config.AdminOff)
	}
	actions := "read-only: set admin.token or HERALD_ADMIN_TOKEN for actions"
	if f.Admin.Token != "" {
		actions = "actions need the admin token"
	}
	opts.Say("admin on http://%s (dashboard at /, %s; /metrics, /healthz, /readyz, /api/lanes)", srv.Addr(), actions)
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	}
	return m, stop, nil
}

// announce says where every broker is reached, above all the embedded NATS
// server that other programs can subscribe to.
func announce(rt *Runtime, stores []*storeRun, say func(string, ...any)) {
	names := make([]string, 0, len(rt.Endpoints))
	for n := range rt.Endpoints {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		say("broker %s: %s", n, rt.Endpoints[n])
	}
	for _, s := range stores {
		for _, l := range s.file.Lanes {
			where := ""
			if len(stores) > 1 {
				where = "store " + s.name + ", "
			}
			say("lane %s: %stable %s → broker %s, destination %s", l.Name, where, l.Table, l.Broker, l.Destination)
		}
	}
}
