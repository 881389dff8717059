// Package cli is the herald command: one type per command, each writing to
// injected streams so tests run it on buffers.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/config"
)

// Exit codes (a contract): 0 ok, 1 runtime failure, 2 bad usage or config.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// usageError marks a bad argument or flag: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// app holds what every command shares: streams and the --config flag.
type app struct {
	stdout, stderr io.Writer
	configPath     string
	logLevel       string
}

// Main runs the herald command line with args (without the program name)
// and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "herald: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, config.ErrInvalid) || isCobraUsage(err) {
		return ExitUsage
	}
	return ExitFailure
}

// isCobraUsage recognises cobra's own flag and argument errors, which it
// returns as plain errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "flag needs an argument",
		"invalid argument", "accepts ", "requires at least", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "herald",
		Short:         "Herald: a transactional outbox relay",
		Long:          "Herald publishes events committed to outbox tables to message brokers, at least once, in order per key where asked.",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.PersistentFlags().StringVar(&a.configPath, "config", "", "config file (default: herald.yaml if present, else the embedded defaults)")
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "", "log level: debug, info, warn, error (overrides log.level)")
	root.AddCommand(a.runCommand(), a.migrateCommand(), a.enqueueCommand(), a.statusCommand(),
		a.deadCommand(), a.benchCommand(), a.demoCommand(), a.versionCommand())
	root.AddCommand(a.projectionCommand(), a.laneCommand())
	return root
}

// load reads the config file and opens the store.
func (a *app) load(ctx context.Context, migrate bool) (*config.Runtime, error) {
	f, err := config.Load(a.configPath)
	if err != nil {
		return nil, err
	}
	return config.OpenStore(ctx, f, migrate)
}

// logger builds the structured logger from the config and --log-level.
func (a *app) logger(f *config.File) (*slog.Logger, error) {
	level := f.Log.Level
	if a.logLevel != "" {
		level = a.logLevel
	}
	var l slog.Level
	if level != "" {
		if err := l.UnmarshalText([]byte(level)); err != nil {
			return nil, usagef("--log-level: %q is not debug, info, warn or error", level)
		}
	}
	opts := &slog.HandlerOptions{Level: l}
	if f.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(a.stderr, opts)), nil
	}
	return slog.New(slog.NewTextHandler(a.stderr, opts)), nil
}

// stdinOr returns os.Stdin; a seam for tests that never read it.
var stdinOr = func() io.Reader { return os.Stdin }
