// Command herald runs the Herald relay and its operator tools; see
// `herald --help` and docs/cli.md.
package main

import (
	"context"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/drivers"
	"github.com/heraldhq/herald/internal/cli"
	"github.com/heraldhq/herald/internal/demo"
	"github.com/heraldhq/herald/internal/verify"
)

// gcPercent is the garbage collector's target when GOGC is not set. A
// relay's live heap is small (the batches in flight) while it allocates
// every event it claims and publishes, so at Go's default of 100 it
// collected often: a third of its CPU during a drain went to marking, and
// on two cores shared with the database and the broker that CPU is
// throughput. At 400 a PostgreSQL drain to NATS (batch 1000, 2 workers)
// ran 6-7 % faster (docs/operations.md); the heap may grow to five times
// the live one, tens of MB. GOGC, when set, wins.
const gcPercent = 400

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(cli.Main(context.Background(), config.Drivers{Brokers: drivers.Brokers(), Stores: drivers.Stores()},
		os.Args[1:], os.Stdout, os.Stderr, demoCommand, verifyCommand))
}

// demoCommand is `herald demo`, the gift wall example: added here so that
// package cli links no example.
func demoCommand(env cli.Env) *cobra.Command { return demo.Command(env) }

// verifyCommand is `herald verify`, added here because it links the
// brokers it reads back.
func verifyCommand(env cli.Env) *cobra.Command { return verify.Command(env) }
