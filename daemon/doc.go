// Package daemon runs what a parsed config file describes, as `herald run`
// does: it opens every store (waiting for a database that is down at
// start), migrates and checks the lanes' tables, starts the brokers, the
// relays, the projections, the admin server and tracing, and runs them
// until its context ends. Package config only reads and validates the
// file; this package is the part that runs it.
//
// A program that embeds Herald with its own adapters lists them, parses
// its file with them and runs it; it links no other adapter:
//
//	drv := config.Drivers{
//		Stores:  []store.Driver{sqlite.Driver{}},
//		Brokers: []broker.Driver{nats.Driver{}},
//	}
//	f, err := config.Load("herald.yaml", drv)
//	if err != nil {
//		log.Fatal(err)
//	}
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
//	defer stop()
//	if err := daemon.Run(ctx, f, daemon.Options{}); err != nil {
//		log.Fatal(err)
//	}
//
// Runtime is the lower-level part, for commands that work on one store
// (OpenStore, Migrate, Outbox) or wire the relay themselves (StartBrokers,
// StartProjections).
package daemon
