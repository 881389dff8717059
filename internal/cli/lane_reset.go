package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/lane"
	"github.com/heraldhq/herald/store"
)

func (a *app) laneResetCommand() *cobra.Command {
	var onDelivered string
	cmd := &cobra.Command{Use: "reset NAME",
		Short: "Forget a log lane's place in the log (position, slot, journal) so that its next start is a first start",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.resetLog(cmd.Context(), args[0], onDelivered)
		}}
	cmd.Flags().StringVar(&onDelivered, "on-delivered", "",
		"for a lane no longer in the config: what it did with delivered rows (mark, delete or leave), which its journaled marks still do; its store is --store's, else the default store")
	return cmd
}

// resetLog forgets what the database keeps for the lane's log reading
// (store.LogReader.ResetLog). A configured lane, whatever its source now
// (a lane switched from `source: log` to `poll` keeps its old position
// until it is reset), applies its journal as its on_delivered says; a lane
// already removed from the config needs onDelivered instead. Its relays
// must be stopped.
func (a *app) resetLog(ctx context.Context, name, onDelivered string) error {
	f, err := a.loadConfig()
	if err != nil {
		return err
	}
	deleteRows, configured, err := resetMode(f, name, onDelivered)
	if err != nil {
		return err
	}
	storeLane := name
	if !configured {
		storeLane = "" // the --store flag's store, else the default
	}
	rt, err := a.load(ctx, openExisting, storeLane)
	if err != nil {
		return err
	}
	defer rt.Close()
	lr, ok := rt.Store.(store.LogReader)
	if !ok {
		return usagef("lane %s: the %s store has no log lanes, so nothing to reset", name, rt.File.Store.Driver)
	}
	res, err := lr.ResetLog(ctx, name, deleteRows)
	if err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, resetReport(name, res, deleteRows))
	return nil
}

// resetMode says whether resetting lane name deletes the rows its journal
// names (on_delivered: delete) and whether the lane is in the config f:
// from the lane's config, or for a lane not in it from onDelivered, which
// a configured lane must not be given (its config decides).
func resetMode(f *config.File, name, onDelivered string) (deleteRows, configured bool, err error) {
	if name == "" {
		return false, false, usagef("lane name is empty")
	}
	if l, lerr := f.Lane(name); lerr == nil {
		if onDelivered != "" {
			od := l.OnDelivered
			if od == "" {
				od = lane.OnDeliveredMark
			}
			return false, true, usagef("--on-delivered is for a lane no longer in the config; lane %s's comes from the config (on_delivered: %s)", name, od)
		}
		return l.OnDelivered == lane.OnDeliveredDelete, true, nil
	} else if onDelivered == "" {
		return false, false, usagef("%v; to reset a lane removed from the config, say what it did with delivered rows: --on-delivered mark, delete or leave", lerr)
	}
	switch od := lane.OnDelivered(onDelivered); od {
	case lane.OnDeliveredMark, lane.OnDeliveredDelete, lane.OnDeliveredLeave:
		return od == lane.OnDeliveredDelete, false, nil
	}
	return false, false, usagef("--on-delivered %q: want mark, delete or leave", onDelivered)
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
