package cli

import (
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/config"
)

// Command makes a command that a binary adds to the built-in ones (Main's
// extra): cmd/herald adds `herald demo` so that this package links no
// example. It is given the options every command shares.
type Command func(Env) *cobra.Command

// Env is what an added command shares with the built-in ones. Its values
// are read when the command runs, after the flags are parsed.
type Env interface {
	// Stdout and Stderr are the command's streams.
	Stdout() io.Writer
	Stderr() io.Writer
	// ConfigPath is --config, empty when not given.
	ConfigPath() string
	// LogLevel is --log-level, empty when not given.
	LogLevel() string
	// Drivers are the broker types and databases the binary ships.
	Drivers() config.Drivers
	// LoadConfig reads --config with the binary's drivers.
	LoadConfig() (*config.File, error)
	// Logger is the logger f's log section and --log-level describe, the
	// one `herald run` logs with.
	Logger(f *config.File) (*slog.Logger, error)
	// Usagef is an error that makes the binary exit 2 (bad usage).
	Usagef(format string, args ...any) error
}

// The app is the Env of the commands Main adds.
var _ Env = (*app)(nil)

func (a *app) Stdout() io.Writer                           { return a.stdout }
func (a *app) Stderr() io.Writer                           { return a.stderr }
func (a *app) ConfigPath() string                          { return a.configPath }
func (a *app) LogLevel() string                            { return a.logLevel }
func (a *app) Drivers() config.Drivers                     { return a.drivers }
func (a *app) LoadConfig() (*config.File, error)           { return a.loadConfig() }
func (a *app) Logger(f *config.File) (*slog.Logger, error) { return a.logger(f) }
func (a *app) Usagef(format string, args ...any) error     { return usagef(format, args...) }
