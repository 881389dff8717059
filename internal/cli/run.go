package cli

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/daemon"
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

// run loads the config and runs it (daemon.Run), cut down to --store's
// store when one is named, until SIGINT or SIGTERM.
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
	if a.storeName != "" {
		if f, err = f.ForStore(a.storeName); err != nil {
			return fmt.Errorf("--store: %w", err)
		}
	}
	return daemon.Run(ctx, f, daemon.Options{Logger: log, NoMigrate: !migrate, Say: a.say,
		Collectors: []prometheus.Collector{buildInfoGauge()}})
}
