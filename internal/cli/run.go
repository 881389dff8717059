package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/admin"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/relay"
)

func (a *app) runCommand() *cobra.Command {
	var noMigrate bool
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Relay events from the outbox tables to the brokers until SIGINT/SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			return a.run(cmd.Context(), !noMigrate)
		},
	}
	cmd.Flags().BoolVar(&noMigrate, "no-migrate", false, "do not run migrations at start")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (written at exit)")
	return cmd
}

// run starts, in this order, what does not need a database (the admin
// server, so probes answer from the first second; the brokers; tracing),
// then every store on its own (runStores).
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
	stores := newStoreRuns(files, log)
	obs, stopAdmin, err := a.startAdmin(f, stores)
	if err != nil {
		return err
	}
	defer stopAdmin()
	whole := f // every store's lanes, or --store's
	if a.storeName != "" {
		whole = files[0]
	}
	brokers := config.BrokerRuntime(whole)
	defer brokers.Close()
	if err := brokers.StartBrokers(ctx, log); err != nil {
		return err
	}
	a.announce(brokers, stores)
	tp, stopTracing, err := a.startTracing(ctx, f.Tracing)
	if err != nil {
		return err
	}
	defer stopTracing()
	err = runStores(ctx, stores, runEnv{brokers: brokers, migrate: migrate, node: f.Node, obs: obs, tp: tp, say: a.say})
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
		lanes[i] = admin.StoreLanes{Name: s.name, Opening: s.opening, Lanes: s.file.Lanes, Health: s.health,
			Projections: projectionRefs(s.file)}
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
		for _, l := range s.file.Lanes {
			where := ""
			if len(stores) > 1 {
				where = "store " + s.name + ", "
			}
			a.say("lane %s: %stable %s → broker %s, destination %s", l.Name, where, l.Table, l.Broker, l.Destination)
		}
	}
}
