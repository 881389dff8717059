package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/lane"
	"github.com/heraldhq/herald/store"
)

func (a *app) laneResetCommand() *cobra.Command {
	return &cobra.Command{Use: "reset NAME",
		Short: "Forget a log lane's place in the log (position, slot, journal) so that its next start is a first start",
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return a.resetLog(cmd.Context(), args[0]) }}
}

// resetLog forgets what the database keeps for the lane's log reading
// (store.LogReader.ResetLog). The lane must be configured, whatever its
// source now: a lane switched from `source: log` to `poll` keeps its old
// position until it is reset. Its relays must be stopped.
func (a *app) resetLog(ctx context.Context, name string) error {
	if f, err := a.loadConfig(); err != nil {
		return err
	} else if _, err := f.Lane(name); err != nil {
		return err
	}
	rt, err := a.load(ctx, openExisting, name)
	if err != nil {
		return err
	}
	defer rt.Close()
	l, err := rt.File.Lane(name)
	if err != nil {
		return err
	}
	lr, ok := rt.Store.(store.LogReader)
	if !ok {
		return usagef("lane %s: the %s store has no log lanes, so nothing to reset", name, rt.File.Store.Driver)
	}
	deleteRows := l.OnDelivered == lane.OnDeliveredDelete
	res, err := lr.ResetLog(ctx, name, deleteRows)
	if err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, resetReport(name, res, deleteRows))
	return nil
}

// resetReport says what a reset did, in one line.
func resetReport(name string, res store.LogReset, deleteRows bool) string {
	if !res.Recorded && res.Marks.Batches == 0 {
		return fmt.Sprintf("lane %s: no log position recorded; nothing to reset", name)
	}
	done := "marked delivered"
	if deleteRows {
		done = "deleted"
	}
	parts := []string{fmt.Sprintf("%d journaled batches applied (%d rows %s, %d already settled, %d gone)",
		res.Marks.Batches, res.Marks.Marked, done, res.Marks.Settled, res.Marks.Gone)}
	for _, r := range res.Released {
		parts = append(parts, r+" dropped")
	}
	return fmt.Sprintf("lane %s (table %s): %s; position and journal deleted: its next start reads from the log's end "+
		"and hands the pending rows no one owns to its polling workers", name, res.Table, strings.Join(parts, "; "))
}
