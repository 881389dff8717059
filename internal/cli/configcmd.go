package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) configCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check or print the effective configuration",
	}
	var offline bool
	check := &cobra.Command{
		Use:   "check",
		Short: "Validate the config file (laid over the defaults), and each mapped lane's table against its mapping",
		Long: "Validate the config file laid over the defaults. A lane with a columns mapping has its table checked against " +
			"the mapping in its store, as herald run checks it at start (the table, its mapped columns and their types) and " +
			"with the status values its rows hold: each problem is named by its key path (exit 2). With --offline, or " +
			"without mapped lanes, it connects to nothing.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := a.loadConfig()
			if err != nil {
				return err
			}
			if !offline {
				if err := a.checkMappedTables(cmd.Context(), f); err != nil {
					return err
				}
			}
			fmt.Fprintf(a.stdout, "config ok: %d lane(s), %d broker(s), store %s\n", len(f.Lanes), len(f.Brokers), f.Store.Driver)
			return nil
		},
	}
	check.Flags().BoolVar(&offline, "offline", false, "check the file alone: do not open the stores of mapped lanes")
	print := &cobra.Command{
		Use:   "print",
		Short: "Print the effective config as YAML (file over defaults, environment applied, defaults filled in), secrets hidden",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			f, err := a.loadConfig()
			if err != nil {
				return err
			}
			if a.logLevel != "" {
				f.Log.Level = a.logLevel // as `herald run` would log
			}
			out, err := f.Print()
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(out)
			return err
		},
	}
	cmd.AddCommand(check, print)
	return cmd
}
