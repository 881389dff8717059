package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald"
)

// tailOptions are `herald tail`'s flags.
type tailOptions struct {
	destination string
	count       int
	asJSON      bool
	full        bool
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
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print each event as one JSON object per line (keys: id, type, topic, tenant, key, destination, headers, payload, time)")
	cmd.Flags().BoolVar(&o.full, "full", false, "print whole payloads in text mode (default: cut at 200 bytes)")
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
		a.printTailed(dest, ev, o)
		if seen++; o.count > 0 && seen >= o.count {
			cancel()
		}
	})
}

// tailed is one line of `herald tail --json`: one snake_case schema.
// Payload is the payload itself when it is JSON, else a string (UTF-8) or
// base64 (PayloadEncoding "base64").
type tailed struct {
	ID              string            `json:"id"`
	Type            string            `json:"type"`
	Topic           string            `json:"topic"`
	Tenant          string            `json:"tenant"`
	Key             string            `json:"key"`
	Destination     string            `json:"destination"`
	Headers         map[string]string `json:"headers"`
	Payload         json.RawMessage   `json:"payload"`
	PayloadEncoding string            `json:"payload_encoding,omitempty"`
	Time            string            `json:"time,omitempty"`
}

// tailedOf is ev as `herald tail --json` prints it.
func tailedOf(dest string, ev herald.Event) tailed {
	out := tailed{ID: ev.ID, Type: ev.Type, Topic: ev.Topic, Tenant: ev.Tenant, Key: ev.PartitionKey,
		Destination: dest, Headers: ev.Headers, Payload: ev.Payload}
	if out.Headers == nil {
		out.Headers = map[string]string{}
	}
	switch {
	case len(ev.Payload) == 0:
		out.Payload = json.RawMessage("null")
	case json.Valid(ev.Payload):
	case utf8.Valid(ev.Payload):
		out.Payload, _ = json.Marshal(string(ev.Payload))
	default:
		out.Payload, _ = json.Marshal(ev.Payload) // []byte: base64
		out.PayloadEncoding = "base64"
	}
	if !ev.CreatedAt.IsZero() {
		out.Time = ev.CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	return out
}

// printTailed prints one event: a line of text (payload cut at 200 bytes
// unless --full) or, with --json, one JSON object.
func (a *app) printTailed(dest string, ev herald.Event, o tailOptions) {
	if o.asJSON {
		_ = json.NewEncoder(a.stdout).Encode(tailedOf(dest, ev))
		return
	}
	payload := string(ev.Payload)
	if !o.full {
		payload = oneLine(payload, 200)
	}
	tenant := ev.Tenant
	if tenant == "" {
		tenant = "-"
	}
	fmt.Fprintf(a.stdout, "%s  %s  %s  %s  tenant=%s  key=%s  %s\n", time.Now().UTC().Format(time.RFC3339), dest, ev.ID,
		ev.Type, tenant, ev.PartitionKey, payload)
}
