package daemon_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/daemon"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/sqlite"
)

// Embed `herald run` in a program with its own adapters: SQLite and a
// broker type of the program's own, printer, which prints each message
// (and, so that the example ends, stops the run after its first batch).
func Example() {
	dir, _ := os.MkdirTemp("", "herald-example")
	defer os.RemoveAll(dir)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	drv := config.Drivers{
		Stores:  []store.Driver{sqlite.Driver{}},
		Brokers: []broker.Driver{printer{stop: stop}},
	}
	f, err := config.Parse([]byte(exampleConfig(dir)), "herald.yaml", drv)
	if err != nil {
		log.Fatal(err)
	}
	enqueueGreeting(ctx, f)
	if err := daemon.Run(ctx, f, daemon.Options{Logger: slog.New(slog.DiscardHandler)}); err != nil {
		log.Fatal(err)
	}
	// Output: greeting.sent to greetings.hello
}

// exampleConfig is the program's config file: its database in dir, its
// broker, one lane, and no admin server (examples run side by side).
func exampleConfig(dir string) string {
	return fmt.Sprintf(`store: {driver: sqlite, dsn: %q}
brokers:
  out: {type: printer}
lanes:
  - {name: greetings, broker: out, destination: "greetings.{topic}", poll_interval: 50ms}
admin: {addr: "off"}
`, filepath.Join(dir, "app.db"))
}

// enqueueGreeting writes one event to the lane's table, as the program
// would in its own transaction (daemon.OpenStore migrates the table
// first).
func enqueueGreeting(ctx context.Context, f *config.File) {
	rt, err := daemon.OpenStore(ctx, f, true)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	ob, err := rt.Outbox(&f.Lanes[0])
	if err != nil {
		log.Fatal(err)
	}
	ev := herald.Event{ID: "greeting-1", Topic: "hello", Type: "greeting.sent", Payload: []byte(`{"to":"world"}`)}
	if err := ob.Enqueue(ctx, rt.Store.DB(), ev); err != nil {
		log.Fatal(err)
	}
}

// printer is the program's own broker type, "printer": a broker.Driver
// whose entries have no keys.
type printer struct{ stop context.CancelFunc }

func (p printer) Type() string                   { return "printer" }
func (p printer) NewConfig() broker.DriverConfig { return &printerConfig{stop: p.stop} }

type printerConfig struct{ stop context.CancelFunc }

func (c *printerConfig) Validate() error { return nil }

func (c *printerConfig) Open(context.Context, broker.OpenEnv) (broker.Opened, error) {
	return broker.Opened{Publisher: printPublisher{stop: c.stop}, Endpoint: "standard output"}, nil
}

// printPublisher prints each message, then stops the example's run.
type printPublisher struct{ stop context.CancelFunc }

func (p printPublisher) Publish(_ context.Context, msgs []broker.Message) []broker.Result {
	for _, m := range msgs {
		fmt.Printf("%s to %s\n", m.Event.Type, m.Destination)
	}
	p.stop()
	return make([]broker.Result, len(msgs))
}

func (printPublisher) Close() error { return nil }
