package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/config"
)

func (a *app) laneCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lane",
		Short: "Pause and resume lanes in every relay process; preview a lane's next messages; reset a log lane",
	}
	pause := &cobra.Command{Use: "pause NAME", Short: "Stop every relay from claiming the lane's events (within one poll interval)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.setPaused(cmd.Context(), args[0], true) }}
	resume := &cobra.Command{Use: "resume NAME", Short: "Let the relays claim the lane's events again",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.setPaused(cmd.Context(), args[0], false) }}
	cmd.AddCommand(pause, resume, a.lanePreviewCommand(), a.laneResetCommand())
	return cmd
}

// setPaused records the lane's pause in the database, where every relay
// process reads it each poll interval. The database must exist and be
// migrated (nothing is created by accident); it migrates again so that the
// state table exists on a database migrated by an older Herald.
func (a *app) setPaused(ctx context.Context, name string, paused bool) error {
	// A wrong lane name is a usage error whatever the state of the database.
	if f, err := a.loadConfig(); err != nil {
		return err
	} else if _, err := f.Lane(name); err != nil && name != "" {
		return err
	}
	rt, err := a.load(ctx, openExisting, name)
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := rt.Migrate(ctx); err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("%w: lane name is empty", config.ErrInvalid)
	}
	if _, err := rt.File.Lane(name); err != nil {
		return err
	}
	if err := rt.Store.SetLanePaused(ctx, name, paused); err != nil {
		return err
	}
	what := "resumed"
	if paused {
		what = "paused"
	}
	fmt.Fprintf(a.stdout, "lane %s %s\n", name, what)
	return nil
}
