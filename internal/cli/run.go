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
	rt, err := openStoreWaiting(ctx, f, migrate, log)
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := rt.StartBrokers(ctx, log); err != nil {
		return err
	}
	projections, err := rt.StartProjections(ctx, log, migrate)
	if err != nil {
		return err
	}
	a.announce(rt)
	health := relay.NewHealth()
	obs, stopAdmin, err := a.startAdmin(f, rt, health)
	if err != nil {
		return err
	}
	defer stopAdmin()
	tp, stopTracing, err := a.startTracing(ctx, f.Tracing)
	if err != nil {
		return err
	}
	defer stopTracing()
	r, err := relay.New(relay.Config{Store: rt.Store, Lanes: rt.Lanes, Node: f.Node, Logger: log, Observer: obs,
		TracerProvider: tp, Health: health})
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
	err = r.Run(ctx)
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
// and returns the relay's metrics observer and a stop function.
func (a *app) startAdmin(f *config.File, rt *config.Runtime, health *relay.Health) (relay.Observer, func(), error) {
	if f.Admin.Addr == config.AdminOff {
		return nil, func() {}, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfoGauge())
	m, err := admin.NewMetrics(reg, rt.Store, rt.Lanes)
	if err != nil {
		return nil, nil, err
	}
	if err := admin.RegisterHealth(reg, health); err != nil {
		return nil, nil, err
	}
	srv, err := admin.Listen(f.Admin.Addr, reg, rt.Store, rt.Lanes, admin.WithHealth(health),
		admin.WithMetrics(m), admin.WithToken(f.Admin.Token))
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
func (a *app) announce(rt *config.Runtime) {
	names := make([]string, 0, len(rt.Endpoints))
	for n := range rt.Endpoints {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a.say("broker %s: %s", n, rt.Endpoints[n])
	}
	for _, l := range rt.File.Lanes {
		a.say("lane %s: table %s → broker %s, destination %s", l.Name, l.Table, l.Broker, l.Destination)
	}
}
