package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald"
)

// tailOptions are `herald tail`'s flags.
type tailOptions struct {
	destination string
	count       int
	asJSON      bool
}

func (a *app) tailCommand() *cobra.Command {
	var o tailOptions
	cmd := &cobra.Command{
		Use:   "tail [LANE]",
		Short: "Print events as the lane's broker receives them (NATS, RabbitMQ, Redis, Kafka), changing nothing",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			lane := ""
			if len(args) == 1 {
				lane = args[0]
			}
			return a.tail(cmd.Context(), lane, o)
		},
	}
	cmd.Flags().StringVar(&o.destination, "destination", "", "subject/routing-key pattern, stream or topic to watch (default: the lane's)")
	cmd.Flags().IntVar(&o.count, "count", 0, "exit after this many events (0: until interrupted)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print each event as JSON")
	return cmd
}

func (a *app) tail(ctx context.Context, laneName string, o tailOptions) error {
	if o.count < 0 {
		return usagef("--count must not be negative")
	}
	f, err := a.loadConfig()
	if err != nil {
		return err
	}
	if _, err := a.logger(f); err != nil {
		return err
	}
	lane, err := f.Lane(laneName)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen := 0
	watching := func(what string) { a.say("lane %s: watching %s (Ctrl-C to stop)", lane.Name, what) }
	return f.Tail(ctx, lane, o.destination, watching, func(dest string, ev herald.Event) {
		a.printTailed(dest, ev, o.asJSON)
		if seen++; o.count > 0 && seen >= o.count {
			cancel()
		}
	})
}

// tailed is one line of `herald tail --json`.
type tailed struct {
	Destination string `json:"destination"`
	herald.Event
	Payload json.RawMessage `json:"payload,omitempty"`
}

// printTailed prints one event: a line of text (payload cut at 200 bytes)
// or, with --json, the whole event.
func (a *app) printTailed(dest string, ev herald.Event, asJSON bool) {
	if asJSON {
		out := tailed{Destination: dest, Event: ev}
		if json.Valid(ev.Payload) {
			out.Payload = ev.Payload
		}
		_ = json.NewEncoder(a.stdout).Encode(out)
		return
	}
	fmt.Fprintf(a.stdout, "%s  %s  %s  %s  key=%s  %s\n", time.Now().UTC().Format(time.RFC3339), dest, ev.ID,
		ev.Type, ev.PartitionKey, oneLine(string(ev.Payload), 200))
}
