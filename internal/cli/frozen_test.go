package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
)

// Rule: a relay frozen (SIGSTOP) inside its claim transaction does not keep
// the rows it locked: the server ends its session within the bound
// (sqltx.TxBound, under the lease), and another relay publishes them
// within lease + bound. After the frozen relay resumes, nothing is lost.
//
// The PostgreSQL lane is ordered: an unordered claim there is one batch
// ending in COMMIT, so the pause hook runs after its transaction and the
// rows are held by their lease alone. An ordered claim runs statement by
// statement, and the hook holds its transaction open with the rows locked
// and their in-flight marks uncommitted; the other relay then sees every
// key's earliest rows unfinished and can take nothing until the server
// ends the frozen session.
func TestFrozenClaimReleasesItsRows(t *testing.T) {
	if testing.Short() {
		t.Skip("freeze test: skipped with -short")
	}
	cases := []struct {
		name, driver, dsn, ordering string
		open                        func(ctx context.Context, dsn string) (store.Store, error)
	}{
		{"mariadb", "mysql", testenv.MySQLDSN(), "none", func(ctx context.Context, dsn string) (store.Store, error) {
			return mysql.Open(ctx, dsn, mysql.Options{})
		}},
		{"postgres", "postgres", testenv.PostgresDSN(), "key", func(ctx context.Context, dsn string) (store.Store, error) {
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
			frozenClaim(t, s, c.driver, c.dsn, c.ordering, natsURL)
		})
	}
}

// frozenLease and frozenBound are the lane's lease and the bound the stores
// derive from it (sqltx.TxBound: half the lease in whole seconds).
const (
	frozenLease = 2 * time.Second
	frozenBound = time.Second
)

func frozenClaim(t *testing.T, s store.Store, driver, dsn, ordering, natsURL string) {
	const total, batch = 300, 100
	table := testenv.Name("frozen")
	stream := strings.ToUpper(table)
	t.Cleanup(func() { deleteNATSStream(natsURL, stream) })
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
store: {driver: %s, dsn: %q}
brokers:
  events: {type: nats, url: %q, stream: %s, subjects: ["%s.>"], create_stream: true}
lanes:
  - {name: main, table: %s, destination: "%s.{topic}", concurrency: 1, batch_size: %d,
     lease: %s, publish_timeout: 500ms, poll_interval: 50ms, ordering: %s}
`, driver, dsn, natsURL, stream, table, table, table, batch, frozenLease, ordering)), 0o600)
	if code, out := runChildSync(t, dir, "migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: %s", out)
	}
	enqueueMany(t, s, table, total)
	scope := store.Scope{Table: table}

	// The first relay's first claim locks a batch, says so through the
	// marker file and waits inside its open transaction; then it is frozen.
	marker := filepath.Join(dir, "in-claim")
	t.Setenv("HERALD_TEST_PAUSE_IN_CLAIM", marker)
	frozen := startChild(t, dir, "run", "--config", cfg)
	os.Unsetenv("HERALD_TEST_PAUSE_IN_CLAIM")
	waitFor(t, 30*time.Second, "the first relay inside its claim transaction", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	t.Cleanup(func() { frozen.cmd.Process.Signal(syscall.SIGCONT) })

	taker := startChild(t, dir, "run", "--config", cfg)
	// lease + bound, and slack for starting a process on a busy machine.
	waitFor(t, frozenLease+frozenBound+5*time.Second, "every event delivered by the other relay", func() bool {
		st, err := s.Stats(context.Background(), scope)
		return err == nil && st.Delivered == total
	})
	t.Logf("all %d events delivered %v after the freeze (lease %v, bound %v)",
		total, time.Since(stopped).Round(10*time.Millisecond), frozenLease, frozenBound)

	// Thawed, the first relay finds its transaction gone: it may publish its
	// batch again (a duplicate) but must not undo a delivery.
	os.Remove(marker)
	if err := frozen.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the thawed relay going on with its claim", func() bool {
		_, err := os.Stat(marker + ".done")
		return err == nil
	})
	frozen.terminate(t)
	taker.terminate(t)
	st, err := s.Stats(context.Background(), scope)
	if err != nil {
		t.Fatal(err)
	}
	if st.Delivered != total || st.Pending+st.InFlight+st.Retrying+st.Dead != 0 {
		t.Fatalf("after the thaw: %+v, want all %d delivered\nfrozen relay:\n%s", st, total, frozen.stderr.String())
	}
	seen := map[string]bool{}
	for _, m := range readStream(t, natsURL, stream, total) {
		seen[m.Header.Get("ce-id")] = true
	}
	if len(seen) != total {
		t.Fatalf("the broker has %d distinct events, want %d", len(seen), total)
	}
}
