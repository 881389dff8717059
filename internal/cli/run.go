package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/admin"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

func (a *app) runCommand() *cobra.Command {
	var noMigrate bool
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Relay events from the outbox tables to the brokers until SIGINT/SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.run(cmd.Context(), !noMigrate)
		},
	}
	cmd.Flags().BoolVar(&noMigrate, "no-migrate", false, "do not run migrations at start")
	return cmd
}

func (a *app) run(ctx context.Context, migrate bool) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	f, err := a.loadConfig()
	if err != nil {
		return err
	}
	log, err := a.logger(f)
	if err != nil {
		return err
	}
	files, err := a.storeFiles(f)
	if err != nil {
		return err
	}
	stores, err := openStores(ctx, files, migrate, log)
	defer closeStores(stores)
	if err != nil {
		return err
	}
	whole := f // every store's lanes, or --store's
	if a.storeName != "" {
		whole = files[0]
	}
	brokers := config.BrokerRuntime(whole)
	defer brokers.Close()
	if err := brokers.StartBrokers(ctx, log); err != nil {
		return err
	}
	var projections []config.Projection
	for _, s := range stores {
		s.rt.UseBrokers(brokers)
		ps, err := s.rt.StartProjections(ctx, s.log, migrate)
		if err != nil {
			return err
		}
		projections = append(projections, ps...)
	}
	a.announce(brokers, stores)
	obs, stopAdmin, err := a.startAdmin(f, stores)
	if err != nil {
		return err
	}
	defer stopAdmin()
	tp, stopTracing, err := a.startTracing(ctx, f.Tracing)
	if err != nil {
		return err
	}
	defer stopTracing()
	relays, err := newRelays(stores, f.Node, obs, tp)
	if err != nil {
		return fmt.Errorf("%w: %v", config.ErrInvalid, err)
	}
	pctx, stopProjections := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, p := range projections {
		a.say("projection %s running", p.Projector.Name())
		wg.Go(func() {
			if err := p.Projector.Run(pctx, p.Source); err != nil {
				log.Error("projection stopped", "projection", p.Projector.Name(), "err", err)
			}
		})
	}
	err = runRelays(ctx, relays)
	stopProjections()
	wg.Wait() // the projectors settle what they hold, then end
	if errors.Is(err, store.ErrLogUnavailable) {
		// A setting of the database's to change: a configuration error.
		return fmt.Errorf("%w: %v", config.ErrInvalid, err)
	}
	log.Info("herald stopped", slog.String("signal", fmt.Sprint(context.Cause(ctx))))
	return err
}

// startAdmin serves metrics and health on admin.addr (unless it is off)
// and returns the relays' metrics observer and a stop function.
func (a *app) startAdmin(f *config.File, stores []*storeRun) (relay.Observer, func(), error) {
	if f.Admin.Addr == config.AdminOff {
		return nil, func() {}, nil
	}
	lanes := make([]admin.StoreLanes, len(stores))
	for i, s := range stores {
		lanes[i] = admin.StoreLanes{Name: s.name, Store: s.rt.Store, Lanes: s.rt.Lanes, Health: s.health}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfoGauge())
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
	a.say("admin on http://%s (dashboard at /, %s; /metrics, /healthz, /readyz, /api/lanes)", srv.Addr(), actions)
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	}
	return m, stop, nil
}

// announce says where every broker is reached, above all the embedded NATS
// server that other programs can subscribe to.
func (a *app) announce(rt *config.Runtime, stores []*storeRun) {
	names := make([]string, 0, len(rt.Endpoints))
	for n := range rt.Endpoints {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a.say("broker %s: %s", n, rt.Endpoints[n])
	}
	for _, s := range stores {
		for _, l := range s.rt.File.Lanes {
			where := ""
			if len(stores) > 1 {
				where = "store " + s.name + ", "
			}
			a.say("lane %s: %stable %s → broker %s, destination %s", l.Name, where, l.Table, l.Broker, l.Destination)
		}
	}
}
