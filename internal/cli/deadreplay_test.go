package cli

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Rule: `herald dead replay` reports what became of the events it put back
// to pending, as `herald replay` does: with a real `herald run` relaying to
// a webhook, two dead events replayed are reported published (and reach
// the webhook); with no relay running, --wait 0 reports them not published
// yet and says why.
func TestDeadReplayReportsTheOutcome(t *testing.T) {
	hooks := &webhookLog{}
	receiver := httptest.NewServer(hooks)
	defer receiver.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, fmt.Sprintf(`store: {driver: sqlite, dsn: %s}
brokers:
  hook: {type: webhook, secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}
lanes:
  - {name: main, table: main_outbox, broker: hook, destination: %q, poll_interval: 50ms}
`, filepath.Join(dir, "h.db"), receiver.URL+"/{topic}"))
	for _, id := range []string{"dead-1", "dead-2", "dead-3"} {
		if code, _, e := cliRun(t, "enqueue", "--create", "--config", cfg, "--type", "T", "--id", id); code != 0 {
			t.Fatal(e)
		}
	}
	killAll(t, openStore(t, dir), "main_outbox")

	code, out, e := cliRun(t, "dead", "replay", "--config", cfg, "dead-3", "--wait", "0")
	if code != 0 || !strings.Contains(out, "replayed 1 dead event(s)") ||
		!strings.Contains(out, "published 0, dropped by the broker as duplicates 0, not published yet 1, dead 0") ||
		!strings.Contains(out, "is `herald run` running") {
		t.Fatalf("dead replay with no relay running: %d %q %q; want 1 not published yet, and why", code, out, e)
	}

	run := startChild(t, dir, "run", "--config", cfg)
	defer run.terminate(t)
	code, out, e = cliRun(t, "dead", "replay", "--config", cfg, "dead-1", "dead-2", "--wait", "60s")
	if code != 0 || !strings.Contains(out, "replayed 2 dead event(s)") ||
		!strings.Contains(out, "published 2, dropped by the broker as duplicates 0, not published yet 0, dead 0") {
		t.Fatalf("dead replay with a relay running: %d %q %q; want 2 published", code, out, e)
	}
	waitFor(t, 30*time.Second, "the 3 replayed events at the webhook", func() bool { return len(hooks.received()) == 3 })
}
