package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/admin"
	"github.com/heraldhq/herald/internal/testenv"
)

// adminAddr waits for `herald run`'s admin address in its output.
func adminAddr(t *testing.T, c *child) string {
	t.Helper()
	re := regexp.MustCompile(`admin on http://(\S+)`)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(c.stderr.String()); m != nil {
			return m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no admin address from the child within 60s; its stderr:\n%s", c.stderr.String())
	return ""
}

// readyz returns /readyz's status and body.
func readyz(addr string) (int, string) {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Rule: `herald run` started while its Redis is down runs on (no exit 1),
// reports not ready naming the broker, and once Redis is up becomes ready
// and delivers, without a restart.
func TestRunStartsWithBrokerDown(t *testing.T) {
	srv := testenv.NewRedis(t) // not started: the broker is down
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
store: {driver: sqlite, dsn: %s}
brokers:
  cache: {type: redis, url: %q, dial_timeout: 200ms}
lanes:
  - {name: main, table: main_outbox, broker: cache, destination: "down.{topic}", poll_interval: 50ms,
     publish_timeout: 500ms}
`, filepath.Join(dir, "h.db"), srv.URL())), 0o600)
	run := startChild(t, dir, "run", "--config", cfg)
	addr := adminAddr(t, run)
	waitFor(t, 30*time.Second, "/readyz 503 naming the broker", func() bool {
		code, body := readyz(addr)
		return code == http.StatusServiceUnavailable && strings.Contains(body, "broker cache unreachable")
	})
	s := openStore(t, dir)
	enqueueMany(t, s, "main_outbox", 5)
	time.Sleep(500 * time.Millisecond) // the relay tries meanwhile; nothing may go dead or be retried
	if st := mainStats(t, s); st.Dead != 0 || st.Retrying != 0 {
		t.Fatalf("events paid for the outage: %+v", st)
	}
	waitFor(t, 30*time.Second, "herald status (another process) showing the broker down", func() bool {
		code, out, _ := cliRun(t, "status", "--config", cfg, "--json")
		var st struct {
			Lanes []admin.LaneStatus `json:"lanes"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Lanes) != 1 || st.Lanes[0].Broker == nil {
			return false
		}
		b := st.Lanes[0].Broker
		return b.Name == "cache" && !b.Up && !b.Since.IsZero() && strings.Contains(b.Error, "refused")
	})
	if _, out, _ := cliRun(t, "status", "--config", cfg); !strings.Contains(out, "broker cache down since") {
		t.Errorf("herald status does not show the outage:\n%s", out)
	}
	srv.Start(t)
	waitFor(t, 30*time.Second, "/readyz 200 once Redis is up", func() bool {
		code, _ := readyz(addr)
		return code == http.StatusOK
	})
	waitFor(t, 30*time.Second, "the events delivered", func() bool { return mainStats(t, s).Delivered == 5 })
	if out := run.stderr.String(); strings.Count(out, "broker unreachable") != 1 || strings.Count(out, "broker recovered") != 1 {
		t.Errorf("want one 'broker unreachable' and one 'broker recovered' line:\n%s", out)
	}
	run.terminate(t)
}
