package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X github.com/heraldhq/herald/internal/cli.Version=…";
// otherwise the module version from the build info is used.
var Version = ""

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Herald's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := Version
			if info, ok := debug.ReadBuildInfo(); ok && v == "" {
				v = info.Main.Version
				for _, s := range info.Settings {
					if s.Key == "vcs.revision" && len(s.Value) >= 12 {
						v += " (" + s.Value[:12] + ")"
					}
				}
			}
			if v == "" {
				v = "(devel)"
			}
			fmt.Fprintf(a.stdout, "herald %s\n", v)
			return nil
		},
	}
}

func (a *app) migrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade every lane's outbox table",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rt, err := a.load(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer rt.Close()
			if err := rt.Migrate(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, "migrated")
			return nil
		},
	}
}
