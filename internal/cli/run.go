package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os/signal"
	"sort"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/relay"
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
	f, err := config.Load(a.configPath)
	if err != nil {
		return err
	}
	log, err := a.logger(f)
	if err != nil {
		return err
	}
	rt, err := config.OpenStore(ctx, f, migrate)
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := rt.StartBrokers(ctx, log); err != nil {
		return err
	}
	a.announce(rt)
	r, err := relay.New(relay.Config{Store: rt.Store, Lanes: rt.Lanes, Node: f.Node, Logger: log})
	if err != nil {
		return fmt.Errorf("%w: %v", config.ErrInvalid, err)
	}
	err = r.Run(ctx)
	log.Info("herald stopped", slog.String("signal", fmt.Sprint(context.Cause(ctx))))
	return err
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
		fmt.Fprintf(a.stderr, "herald: broker %s: %s\n", n, rt.Endpoints[n])
	}
	for _, l := range rt.File.Lanes {
		fmt.Fprintf(a.stderr, "herald: lane %s: table %s → broker %s, destination %s\n", l.Name, l.Table, l.Broker, l.Destination)
	}
}
