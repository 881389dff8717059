// Package verify is `herald verify`: it proves Herald's guarantees on the
// user's own database and broker, with faults, on a scratch table and a
// scratch destination of its own (docs/verify.md). Producers commit events
// with plain transactions, several `herald run` children of this binary
// relay them through fault proxies, a consumer reads everything back, and
// the reconciliation gives a verdict per guarantee.
package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/config"
)

// Options are the flags of herald verify.
type Options struct {
	// ConfigPath is --config (empty: herald.yaml if present, else the
	// embedded defaults).
	ConfigPath string
	// Drivers are the broker types and databases the config is read with
	// (the binary's).
	Drivers config.Drivers
	// Lane is --lane (empty: the first lane).
	Lane string
	// Events is how many events the producers try to commit.
	Events int
	// Duration is how long production lasts; the faults fall inside it.
	Duration time.Duration
	// Faults is the --faults list (faults.go).
	Faults string
	// Relays is how many `herald run` children relay the scratch table.
	Relays int
	// JSON prints the report as JSON.
	JSON bool
	// Keep leaves the scratch table and destination in place.
	Keep bool
	// Drain bounds the wait for the last events after production.
	Drain time.Duration
	// ReadLate starts reading back only after the faults: it then counts
	// what the broker kept, not what it passed on before a restart.
	ReadLate bool
	// RestartBrokerCmd and RestartDBCmd are shell commands that restart
	// the broker or the database (a restart fault each, when given).
	RestartBrokerCmd, RestartDBCmd string
}

// ErrFailed is returned when a guarantee did not hold: exit code 1 after
// the report.
var ErrFailed = errors.New("verify: a guarantee did not hold")

// Env is what the command takes from the CLI (cli.Env has it): its
// streams, the root's --config (read when the command runs) and the
// drivers the binary ships.
type Env interface {
	Stdout() io.Writer
	Stderr() io.Writer
	ConfigPath() string
	Drivers() config.Drivers
}

// Command returns the `verify` command, which cmd/herald adds to the CLI
// (cli.Main's extra): it links the brokers it reads back, which package
// cli does not.
func Command(env Env) *cobra.Command {
	o := Options{}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Prove the guarantees on this config's database and broker, with faults (docs/verify.md)",
		Long: "verify relays events of its own through a scratch table and a scratch destination of the lane's store and broker,\n" +
			"with several `herald run` children it kills, freezes and cuts off, reads them all back, and reports a verdict per guarantee.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The root's --store names a store; verify takes the lane's.
			if f := cmd.Flags().Lookup("store"); f != nil && f.Changed {
				return invalidf("--store: verify works on the store of the lane it verifies; name the lane with --lane")
			}
			o.ConfigPath, o.Drivers = env.ConfigPath(), env.Drivers()
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return Run(ctx, o, env.Stdout(), env.Stderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Lane, "lane", "", "lane whose store, broker and settings to verify (default: the first lane)")
	fl.IntVar(&o.Events, "events", 2000, "events the producers commit (some rolled back, some late, some per key in sequence)")
	fl.DurationVar(&o.Duration, "duration", 20*time.Second, "how long production lasts; the faults fall inside it")
	fl.StringVar(&o.Faults, "faults", "default", "faults to inject, comma-separated: "+faultNames()+"; default, all or none")
	fl.IntVar(&o.Relays, "relays", 3, "herald run children relaying the scratch table")
	fl.BoolVar(&o.JSON, "json", false, "print the report as JSON (for CI)")
	fl.BoolVar(&o.Keep, "keep", false, "leave the scratch table and destination for inspection")
	fl.BoolVar(&o.ReadLate, "read-late", false, "read back only after the faults (and restarts): what the broker kept, not what it passed on (no latency figures)")
	fl.StringVar(&o.RestartBrokerCmd, "restart-broker-cmd", "", "shell command that restarts the broker: adds the fault restart-broker")
	fl.StringVar(&o.RestartDBCmd, "restart-db-cmd", "", "shell command that restarts the database: adds the fault restart-db")
	fl.DurationVar(&o.Drain, "drain", 0, "longest wait for the last events after production (default: 3 leases + 30s)")
	return cmd
}

// Run runs one verification and writes its report to stdout; progress
// goes to stderr.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	p, err := plan(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer p.cleanup(stderr)
	rep := p.execute(ctx)
	if err := rep.write(stdout, o.JSON); err != nil {
		return err
	}
	if !rep.Held {
		return ErrFailed
	}
	return nil
}

// check refuses flags out of range (exit 2).
func (o Options) check() error {
	switch {
	case o.Events < 1:
		return invalidf("--events: %d; want at least 1", o.Events)
	case o.Duration < time.Second:
		return invalidf("--duration: %v; want at least 1s", o.Duration)
	case o.Relays < 1:
		return invalidf("--relays: %d; want at least 1", o.Relays)
	case o.Drain < 0:
		return invalidf("--drain: %v is negative", o.Drain)
	}
	_, err := o.faults()
	return err
}

// faults is the fault list: --faults with the restarts the commands give.
func (o Options) faults() ([]string, error) {
	f, err := parseFaults(o.Faults)
	if err != nil {
		return nil, err
	}
	return withRestarts(f, o.RestartBrokerCmd, o.RestartDBCmd)
}

// say writes one progress line.
func say(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "herald verify: "+format+"\n", args...)
}
