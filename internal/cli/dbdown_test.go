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
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
)

// ownDB is a database server of the test's own that it can kill.
type ownDB interface {
	Start(t testing.TB)
	Kill()
	DSN(db string) string
}

// Rule: `herald run` started while its database is down waits for it
// (one log line) instead of exiting; a database SIGKILLed under the
// running relay makes it not ready and logs once; restarted, the relay
// recovers without a restart of its own and delivers. On a MariaDB and a
// PostgreSQL of the test's own.
func TestRunSurvivesDatabaseOutage(t *testing.T) {
	t.Run("mariadb", func(t *testing.T) {
		db := testenv.NewMariaDB(t)
		db.Start(t)
		createDatabase(t, "mysql", db.DSN(""))
		db.Kill()
		testDatabaseOutage(t, db, "mysql", func() (store.Store, error) {
			return mysql.Open(context.Background(), db.DSN("herald"), mysql.Options{})
		})
	})
	t.Run("postgres", func(t *testing.T) {
		db := testenv.NewPostgres(t)
		db.Start(t)
		createDatabase(t, "pgx", db.DSN("postgres"))
		db.Kill()
		testDatabaseOutage(t, db, "postgres", func() (store.Store, error) {
			return postgres.Open(context.Background(), db.DSN("herald"), postgres.Options{})
		})
	})
}

// createDatabase creates the database herald, retrying while the server
// is still starting up.
func createDatabase(t *testing.T, driver, dsn string) {
	t.Helper()
	admin, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	waitFor(t, 30*time.Second, "CREATE DATABASE herald", func() bool {
		_, err = admin.Exec("CREATE DATABASE herald")
		return err == nil
	})
}

func testDatabaseOutage(t *testing.T, db ownDB, driver string, open func() (store.Store, error)) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
store: {driver: %s, dsn: %q}
brokers:
  out: {type: stdout}
lanes:
  - {name: main, table: main_outbox, destination: "x.{topic}", poll_interval: 50ms}
`, driver, db.DSN("herald"))), 0o600)
	run := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 30*time.Second, "the wait for the database logged", func() bool {
		return strings.Contains(run.stderr.String(), "database unreachable at start")
	})
	db.Start(t)
	addr := adminAddr(t, run)
	waitFor(t, 30*time.Second, "/readyz 200", func() bool { code, _ := readyz(addr); return code == http.StatusOK })

	var s store.Store
	var err error
	waitFor(t, 30*time.Second, "the test's own store to open", func() bool { s, err = open(); return err == nil })
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
