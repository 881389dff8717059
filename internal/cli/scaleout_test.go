package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
)

// Rule: three `herald run` processes on one database relay every event to
// NATS; with no lease expiring, none is published twice (counted on the
// wire, beside the stream, which would drop a second copy).
func TestScaleOutThreeRelays(t *testing.T) {
	if testing.Short() {
		t.Skip("scale-out test: skipped with -short")
	}
	cases := []struct {
		name, driver, dsn string
		open              func(ctx context.Context, dsn string) (store.Store, error)
	}{
		{"mariadb", "mysql", testenv.MySQLDSN(), func(ctx context.Context, dsn string) (store.Store, error) {
			return mysql.Open(ctx, dsn, mysql.Options{})
		}},
		{"postgres", "postgres", testenv.PostgresDSN(), func(ctx context.Context, dsn string) (store.Store, error) {
			return postgres.Open(ctx, dsn, postgres.Options{})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			natsURL := testenv.RequireNATS(t)
			s, err := c.open(context.Background(), c.dsn)
			if err != nil {
				testenv.Unreachable(t, c.name, err)
			}
			defer s.Close()
			scaleOut(t, s, c.driver, c.dsn, natsURL, 3, 50000)
		})
	}
}

// scaleOut relays total events with procs `herald run` processes and
// returns the events/s (enqueue excluded).
func scaleOut(t *testing.T, s store.Store, driver, dsn, natsURL string, procs, total int) float64 {
	table := testenv.Name("scale")
	stream := strings.ToUpper(table)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
store: {driver: %s, dsn: %q}
brokers:
  events: {type: nats, url: %q, stream: %s, subjects: ["%s.>"], create_stream: true}
lanes:
  - {name: main, table: %s, destination: "%s.{topic}", concurrency: 2, batch_size: 500}
`, driver, dsn, natsURL, stream, table, table, table)), 0o600)
	if code, out := runChildSync(t, dir, "migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: %s", out)
	}
	// The machine's NATS and databases are shared: leave no stream or
	// table behind.
	defer deleteStream(natsURL, stream)
	defer s.Drop(context.Background(), table) //nolint:errcheck // best effort
	enqueueMany(t, s, table, total)
	wire := tapWire(t, natsURL, table+".>")
	start := time.Now()
	var relays []*child
	for range procs {
		relays = append(relays, startChild(t, dir, "run", "--config", cfg))
	}
	scope := store.Scope{Table: table}
	waitFor(t, 5*time.Minute, "every event delivered", func() bool {
		st, err := s.Stats(context.Background(), scope)
		return err == nil && st.Delivered == int64(total)
	})
	elapsed := time.Since(start)
	lost := 0
	for _, r := range relays {
		r.terminate(t)
		lost += strings.Count(r.stderr.String(), "lease lost")
	}
	// The stream dedupes by Nats-Msg-Id: it shows that nothing is missing;
	// the wire shows whether anything was published twice.
	seen := map[string]bool{}
	for _, m := range readStream(t, natsURL, stream, total) {
		seen[m.Header.Get("ce-id")] = true
	}
	if len(seen) != total {
		t.Fatalf("NATS has %d distinct events, want %d", len(seen), total)
	}
	dups := checkWire(t, wire, total, 0)
	rate := float64(total) / elapsed.Seconds()
	t.Logf("%d relays: %d events in %s (%.0f events/s, enqueue excluded); %d published more than once, %d leases lost",
		procs, total, elapsed.Round(time.Millisecond), rate, dups, lost)
	return rate
}
