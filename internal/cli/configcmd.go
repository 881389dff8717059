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
	check := &cobra.Command{
		Use:   "check",
		Short: "Validate the config file (laid over the defaults); connects to nothing",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			f, err := a.loadConfig()
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "config ok: %d lane(s), %d broker(s), store %s\n", len(f.Lanes), len(f.Brokers), f.Store.Driver)
			return nil
		},
	}
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
