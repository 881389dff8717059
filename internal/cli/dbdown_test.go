package cli

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store/mysql"
)

// Rule: `herald run` started while its database is down waits for it
// (one log line) instead of exiting; a database SIGKILLed under the
// running relay makes it not ready and logs once; restarted, the relay
// recovers without a restart of its own and delivers.
func TestRunSurvivesDatabaseOutage(t *testing.T) {
	db := testenv.NewMariaDB(t)
	db.Start(t)
	admin, err := sql.Open("mysql", db.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("CREATE DATABASE herald"); err != nil {
		t.Fatal(err)
	}
	admin.Close()
	db.Kill()

	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
store: {driver: mysql, dsn: %q}
brokers:
  out: {type: stdout}
lanes:
  - {name: main, table: main_outbox, destination: "x.{topic}", poll_interval: 50ms}
`, db.DSN("herald"))), 0o600)
	run := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 30*time.Second, "the wait for the database logged", func() bool {
		return strings.Contains(run.stderr.String(), "database unreachable at start")
	})
	db.Start(t)
	addr := adminAddr(t, run)
	waitFor(t, 30*time.Second, "/readyz 200", func() bool { code, _ := readyz(addr); return code == http.StatusOK })

	s, err := mysql.Open(context.Background(), db.DSN("herald"), mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	enqueueMany(t, s, "main_outbox", 5)
	waitFor(t, 30*time.Second, "delivered before the outage", func() bool { return mainStats(t, s).Delivered == 5 })

	db.Kill()
	waitFor(t, 30*time.Second, "/readyz not 200 with the database killed", func() bool {
		code, _ := readyz(addr)
		return code == http.StatusServiceUnavailable
	})
	waitFor(t, 30*time.Second, "the outage logged", func() bool {
		return strings.Contains(run.stderr.String(), "database unreachable: claims fail")
	})
	time.Sleep(2 * time.Second) // forty poll intervals of failing claims: still one line
	if n := strings.Count(run.stderr.String(), "database unreachable: claims fail"); n != 1 {
		t.Errorf("%d 'database unreachable' lines, want 1", n)
	}

	db.Start(t)
	waitFor(t, 60*time.Second, "/readyz 200 after the restart", func() bool { code, _ := readyz(addr); return code == http.StatusOK })
	enqueueMany(t, s, "main_outbox", 5)
	waitFor(t, 60*time.Second, "delivered after the outage", func() bool { return mainStats(t, s).Delivered == 10 })
	if n := strings.Count(run.stderr.String(), "database recovered"); n != 1 {
		t.Errorf("%d 'database recovered' lines, want 1:\n%s", n, run.stderr.String())
	}
	run.terminate(t)
}
