package cli

import (
	"context"
	"os"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
)

// TestScaleOutCurve measures the relay's scale-out: 1, 2, 3 and 4 `herald
// run` processes (2 workers, batch 500 each) on one MariaDB and one
// PostgreSQL relay 100,000 events to NATS, in the order 1-4 and then 4-1
// so that a drift of the machine's load hits both ends alike. It is a
// measurement (docs/scaling.md), minutes long: it runs only with
// HERALD_SCALE_CURVE=1.
func TestScaleOutCurve(t *testing.T) {
	if os.Getenv("HERALD_SCALE_CURVE") != "1" {
		t.Skip("a measurement; set HERALD_SCALE_CURVE=1 to run it")
	}
	natsURL := testenv.RequireNATS(t)
	ctx := context.Background()
	my, err := mysql.Open(ctx, testenv.MySQLDSN(), mysql.Options{})
	if err != nil {
		testenv.Unreachable(t, "MariaDB", err)
	}
	defer my.Close()
	pg, err := postgres.Open(ctx, testenv.PostgresDSN(), postgres.Options{})
	if err != nil {
		testenv.Unreachable(t, "PostgreSQL", err)
	}
	defer pg.Close()
	for _, procs := range []int{1, 2, 3, 4, 4, 3, 2, 1} {
		my := scaleOut(t, my, "mysql", testenv.MySQLDSN(), natsURL, procs, 100_000)
		pg := scaleOut(t, pg, "postgres", testenv.PostgresDSN(), natsURL, procs, 100_000)
		t.Logf("curve: %d processes: MariaDB %.0f, PostgreSQL %.0f events/s", procs, my, pg)
	}
}

// deleteStream removes a test stream from the machine's NATS server.
func deleteStream(url, stream string) {
	nc, err := natsgo.Connect(url)
	if err != nil {
		return
	}
	defer nc.Close()
	if js, err := jetstream.New(nc); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, stream)
	}
}
