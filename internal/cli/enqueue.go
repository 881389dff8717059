package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald"
)

type enqueueOptions struct {
	lane, topic, eventType, key, tenant, payload, id string
	headers                                          []string
	delay                                            time.Duration
	// create migrates the lane's table first (else it must exist).
	create bool
}

func (a *app) enqueueCommand() *cobra.Command {
	var o enqueueOptions
	cmd := &cobra.Command{
		Use:   "enqueue",
		Short: "Write one event into a lane's outbox table",
		Example: `  herald enqueue --topic wallet --type WalletGiftDebited --key user-1 --payload '{"gift":"rose"}'
  herald enqueue --type Report --payload @report.json --header trace=abc --delay 1m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ev, err := o.event()
			if err != nil {
				return err
			}
			return a.enqueue(cmd, o, ev)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.lane, "lane", "", "lane whose table to write to (default: the first lane)")
	fl.StringVar(&o.topic, "topic", "default", "event topic")
	fl.StringVar(&o.eventType, "type", "", "event type (required)")
	fl.StringVar(&o.key, "key", "", "partition key (ordering key)")
	fl.StringVar(&o.tenant, "tenant", "", "tenant (app_code)")
	fl.StringVar(&o.payload, "payload", "{}", "payload: JSON text, or @FILE to read a file (@- for standard input)")
	fl.StringVar(&o.id, "id", "", "event id (default: a new UUIDv7)")
	fl.StringArrayVar(&o.headers, "header", nil, "header k=v (repeatable; names Herald sets itself, such as ce-id, are refused)")
	fl.DurationVar(&o.delay, "delay", 0, "deliver no earlier than this from now")
	fl.BoolVar(&o.create, "create", false, "create (migrate) the database and the lane's table if needed")
	return cmd
}

// event validates the flags into an event, naming the flag at fault.
func (o enqueueOptions) event() (herald.Event, error) {
	if o.eventType == "" {
		return herald.Event{}, usagef("--type is required")
	}
	if o.delay < 0 {
		return herald.Event{}, usagef("--delay %s is negative", o.delay)
	}
	payload, err := readPayload(o.payload)
	if err != nil {
		return herald.Event{}, err
	}
	headers := map[string]string{}
	for _, h := range o.headers {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return herald.Event{}, usagef("--header %q is not k=v", h)
		}
		if why := herald.ReservedHeader(k); why != "" {
			return herald.Event{}, usagef("--header %q: %q is %s; use another name (e.g. %s%s)",
				h, k, why, herald.RenamedHeaderPrefix, strings.ToLower(k))
		}
		headers[k] = v
	}
	ev := herald.Event{ID: o.id, Tenant: o.tenant, Topic: o.topic, Type: o.eventType,
		PartitionKey: o.key, Headers: headers, Payload: payload}
	if o.delay > 0 {
		ev.AvailableAt = time.Now().Add(o.delay)
	}
	return ev, nil
}

// readPayload returns the payload flag's bytes, checking they are JSON.
func readPayload(v string) ([]byte, error) {
	data := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if name == "-" {
			data, err = readAll(stdinOr())
		} else {
			data, err = os.ReadFile(name)
		}
		if err != nil {
			return nil, usagef("--payload: %v", err)
		}
	}
	if !json.Valid(data) {
		return nil, usagef("--payload is not valid JSON (use @FILE for a file)")
	}
	return data, nil
}

func (a *app) enqueue(cmd *cobra.Command, o enqueueOptions, ev herald.Event) error {
	ctx := cmd.Context()
	// A wrong --lane is a usage error whatever the state of the database.
	if f, err := a.loadConfig(); err != nil {
		return err
	} else if _, err := f.Lane(o.lane); err != nil {
		return err
	}
	mode := openExisting
	if o.create {
		mode = openMigrating
	}
	rt, err := a.load(ctx, mode, o.lane)
	if err != nil {
		return err
	}
	defer rt.Close()
	lane, err := rt.File.Lane(o.lane)
	if err != nil {
		return err
	}
	ob, err := rt.Outbox(lane)
	if err != nil {
		return err
	}
	if ev.ID == "" {
		ev.ID = herald.NewID()
	} else if r, err := rt.Store.Get(ctx, lane.Table, ev.ID); err == nil {
		// Enqueue is idempotent by event id: say so rather than print the id
		// as if a new event had been written.
		return fmt.Errorf("event %s is already in %s (status %s): nothing enqueued", ev.ID, lane.Table, r.Status)
	}
	tx, err := rt.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := ob.Enqueue(ctx, tx, ev); errors.Is(err, herald.ErrPayloadTooLarge) {
		return usageError{fmt.Errorf("%w (lane %s takes the smaller of its max_payload and broker %s's limit)", err, lane.Name, lane.Broker)}
	} else if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, ev.ID)
	return nil
}
