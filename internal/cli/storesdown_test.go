package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
)

// Rule: with several stores in one `herald run`, a database SIGKILLed
// under it is that store's outage only: /readyz names the store,
// herald_store_up{store} drops for it alone, the other store's lane keeps
// delivering, and once the database is back its lane delivers again
// without a restart. On a SQLite store and a MariaDB of the test's own.
func TestRunSeveralStoresOneDown(t *testing.T) {
	db := testenv.NewMariaDB(t)
	db.Start(t)
	createDatabase(t, "mysql", db.DSN(""))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, fmt.Sprintf(`
store: {driver: sqlite, dsn: %s}
stores:
  b: {driver: mysql, dsn: %q}
brokers:
  out: {type: stdout}
lanes:
  - {name: main, table: main_outbox, destination: "x.{topic}", poll_interval: 50ms}
  - {name: lb, store: b, table: main_outbox, destination: "x.{topic}", poll_interval: 50ms}
`, filepath.Join(dir, "h.db"), db.DSN("herald")))
	run := startChild(t, dir, "run", "--config", cfg)
	addr := adminAddr(t, run)
	waitFor(t, 60*time.Second, "/readyz 200", func() bool { code, _ := readyz(addr); return code == http.StatusOK })
	lite := openStore(t, dir)
	b, err := mysql.Open(context.Background(), db.DSN("herald"), mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	enqueueMany(t, lite, "main_outbox", 5)
	enqueueMany(t, b, "main_outbox", 5)
	waitDelivered(t, "both stores before the outage", map[store.Store]int64{lite: 5, b: 5})

	db.Kill()
	waitFor(t, 30*time.Second, "/readyz 503 naming store b", func() bool {
		code, body := readyz(addr)
		return code == http.StatusServiceUnavailable && strings.HasPrefix(body, "store b: ") && !strings.Contains(body, "store default")
	})
	waitFor(t, 30*time.Second, "herald_store_up of b alone at 0", func() bool {
		m := scrape(t, addr)
		return strings.Contains(m, `herald_store_up{store="b"} 0`) && strings.Contains(m, `herald_store_up{store="default"} 1`)
	})
	enqueueMany(t, lite, "main_outbox", 5)
	waitDelivered(t, "the default store during b's outage", map[store.Store]int64{lite: 10})

	db.Start(t)
	waitFor(t, 60*time.Second, "/readyz 200 after the restart", func() bool { code, _ := readyz(addr); return code == http.StatusOK })
	enqueueMany(t, b, "main_outbox", 5)
	waitDelivered(t, "store b after its outage", map[store.Store]int64{b: 10})
	if !strings.Contains(run.stderr.String(), "store=b") {
		t.Errorf("the outage's log lines do not name store b:\n%s", run.stderr.String())
	}
	run.terminate(t)
}

// waitDelivered waits until each store's main_outbox has want delivered.
func waitDelivered(t *testing.T, what string, want map[store.Store]int64) {
	t.Helper()
	waitFor(t, 60*time.Second, what, func() bool {
		for s, n := range want {
			if st, err := s.Stats(context.Background(), store.Scope{Table: "main_outbox"}); err != nil || st.Delivered != n {
				return false
			}
		}
		return true
	})
}

// scrape returns the admin endpoint's /metrics ("" when it does not answer).
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}
