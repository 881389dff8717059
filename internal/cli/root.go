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
	"sync"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/daemon"
	"github.com/heraldhq/herald/store"
)

// Exit codes (a contract): 0 ok, 1 runtime failure, 2 bad usage or config
// (settings a database refuses included).
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

// app holds what every command shares: the drivers, streams and the
// --config flag.
type app struct {
	drivers        config.Drivers
	stdout, stderr io.Writer
	configPath     string
	logLevel       string
	// storeName is --store: the store a command works on (stores.go).
	storeName string
	// log is the logger built from the config (nil before); jsonLog says
	// whether log.format is json, so that every "herald:" line follows it.
	log     *slog.Logger
	jsonLog bool
	// sayMu keeps "herald:" lines whole: each store of `herald run` says
	// what it starts from its own goroutine.
	sayMu sync.Mutex
}

// Main runs the herald command line with args (without the program name)
// and returns the exit code. d are the broker types and databases the
// binary ships (cmd/herald passes those of package drivers; a smaller
// binary passes fewer and links no other adapter); extra adds commands beside the
// built-in ones (cmd/herald adds `herald demo`).
func Main(ctx context.Context, d config.Drivers, args []string, stdout, stderr io.Writer, extra ...Command) int {
	a := &app{drivers: d, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	for _, c := range extra {
		root.AddCommand(c(a))
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	a.sayError(err)
	var ue usageError
	var ce *daemon.ConfigError
	var le *config.UnknownLaneError
	if errors.As(err, &ue) || errors.As(err, &ce) || errors.As(err, &le) || errors.Is(err, config.ErrInvalid) ||
		errors.Is(err, store.ErrMisconfigured) || isCobraUsage(err) {
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
		Version:       version(),
		// Every command checks --log-level, used or not, so a typo is
		// never accepted silently.
		PersistentPreRunE: func(*cobra.Command, []string) error { _, err := parseLevel(a.logLevel); return err },
	}
	root.SetVersionTemplate("herald {{.Version}}\n")
	root.PersistentFlags().StringVar(&a.configPath, "config", "", "config file (default: herald.yaml if present, else the embedded defaults)")
	root.PersistentFlags().StringVar(&a.storeName, "store", "",
		"store to work on, of the config's stores (default: the lane's when a lane is named, else the default store; run, status and migrate: every store)")
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "", "log level: debug, info, warn, error (overrides log.level)")
	root.AddCommand(a.runCommand(), a.migrateCommand(), a.enqueueCommand(), a.statusCommand(),
		a.deadCommand(), a.replayCommand(), a.benchCommand(), a.versionCommand())
	root.AddCommand(a.adoptCommand())
	root.AddCommand(a.projectionCommand(), a.configCommand(), a.laneCommand(), a.tailCommand())
	return root
}

// openMode says what opening the store may do to the database.
type openMode int

const (
	// openExisting: the database and every lane's table must already be
	// migrated (commands that only read or write rows); nothing is created.
	openExisting openMode = iota
	// openMigrating: migrate every lane's table when store.migrate is on
	// (run, enqueue --create).
	openMigrating
	// openBare: open, creating an SQLite file if needed, and change nothing
	// (migrate, bench, projection: they manage their own tables).
	openBare
)

// loadConfig reads the config file (--config) with the drivers the binary
// ships (Main's).
func (a *app) loadConfig() (*config.File, error) {
	return config.Load(a.configPath, a.drivers)
}

// load reads the config file and opens the store of lane (storeFile) as
// mode allows.
func (a *app) load(ctx context.Context, mode openMode, lane string) (*daemon.Runtime, error) {
	all, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	f, err := a.storeFile(all, lane)
	if err != nil {
		return nil, err
	}
	return openFile(ctx, f, mode)
}

// openFile opens the store of f (one store's part of a config) as mode
// allows.
func openFile(ctx context.Context, f *config.File, mode openMode) (*daemon.Runtime, error) {
	if mode == openExisting {
		if err := daemon.CheckDatabaseExists(f.Store); err != nil {
			return nil, err
		}
	}
	rt, err := daemon.OpenStore(ctx, f, mode == openMigrating)
	if err != nil {
		return nil, err
	}
	if mode == openExisting {
		if err := rt.CheckMigrated(ctx); err != nil {
			rt.Close()
			return nil, err
		}
	}
	return rt, nil
}

// logger builds the structured logger from the config and --log-level.
func (a *app) logger(f *config.File) (*slog.Logger, error) {
	lc := f.Log.WithDefaults() // as `herald config print` shows it
	level := lc.Level
	if a.logLevel != "" {
		level = a.logLevel
	}
	l, err := parseLevel(level)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: l}
	a.jsonLog = lc.Format == "json"
	if a.jsonLog {
		a.log = slog.New(slog.NewJSONHandler(a.stderr, opts))
	} else {
		a.log = slog.New(slog.NewTextHandler(a.stderr, opts))
	}
	a.routeDependencyLogs(a.log)
	return a.log, nil
}

// parseLevel reads a log level; empty is info.
func parseLevel(level string) (slog.Level, error) {
	var l slog.Level
	if level == "" {
		return l, nil
	}
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return l, usagef("--log-level: %q is not debug, info, warn or error", level)
	}
	return l, nil
}

// say writes one of the command's own "herald: …" lines to stderr: plain
// text, or a JSON log record when log.format is json.
func (a *app) say(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if a.jsonLog && a.log != nil {
		a.log.Info(msg)
		return
	}
	a.sayMu.Lock()
	defer a.sayMu.Unlock()
	fmt.Fprintf(a.stderr, "herald: %s\n", msg)
}

// sayError reports the error a command ended with, without repeating the
// "herald: " that errors of the root package already start with.
func (a *app) sayError(err error) {
	msg := strings.TrimPrefix(err.Error(), "herald: ")
	if a.jsonLog && a.log != nil {
		a.log.Error(msg)
		return
	}
	fmt.Fprintf(a.stderr, "herald: %s\n", msg)
}

// stdinOr returns os.Stdin; a seam for tests that never read it.
var stdinOr = func() io.Reader { return os.Stdin }
