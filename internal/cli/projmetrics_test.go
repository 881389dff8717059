package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// Rule: under `herald run`, a YAML projection whose statement fails for one
// event (a CHECK the payload breaks) shows where an operator looks: in
// /metrics its applied and failed counts, its dead gauge, its ledger rows
// by state and, as it reads the outbox, its lag and events behind; and in
// `herald status` with its counts.
func TestProjectionMetricsAndStatus(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "    poll_interval: 50ms\n")
	appendConfig(t, cfg, `projections:
  - name: gifts
    source: {outbox: main_outbox}
    max_attempts: 2
    retry: {initial: 10ms, max: 20ms}
    statements: ["INSERT INTO gift_wall (id, n) VALUES (:event.id, :payload.n)"]
`)
	for i, n := range []string{"1", "2", "0", "3"} {
		args := []string{"enqueue", "--config", cfg, "--type", "GiftSent", "--payload", `{"n":` + n + `}`}
		if i == 0 {
			args = append(args, "--create")
		}
		if code, _, e := cliRun(t, args...); code != 0 {
			t.Fatal(e)
		}
	}
	s := openStore(t, dir)
	if _, err := s.DB().Exec("CREATE TABLE gift_wall (id TEXT PRIMARY KEY, n INTEGER NOT NULL CHECK (n > 0))"); err != nil {
		t.Fatal(err)
	}
	run := startChild(t, dir, "run", "--config", cfg)
	defer run.terminate(t)
	addr := adminAddr(t, run)
	want := []string{
		`herald_projection_applied_total{projection="gifts"} 3`,
		`herald_projection_failed_total{outcome="dead",projection="gifts"} 1`,
		`herald_projection_failed_total{outcome="retry",projection="gifts"} 1`,
		`herald_projection_dead{projection="gifts"} 1`,
		`herald_projection_events{projection="gifts",state="done"} 3`,
		`herald_projection_events_behind{projection="gifts"} 0`,
		`herald_projection_lag_seconds{projection="gifts"} 0`,
	}
	var metrics string
	waitFor(t, 30*time.Second, "the projection's metrics", func() bool {
		metrics = scrape(t, addr)
		for _, w := range want {
			if !strings.Contains(metrics, w) {
				return false
			}
		}
		return true
	})
	checkDeployedProjectionMetrics(t, metrics)
	code, out, e := cliRun(t, "status", "--config", cfg)
	if code != 0 || !strings.Contains(out, "PROJECTION") || !regexp.MustCompile(`gifts\s+default\s+0\s+0\s+3\s+1\s+0\s+0\.0s`).MatchString(out) {
		t.Fatalf("herald status: %d %q %q; want the projection gifts with 3 done, 1 dead, 0 behind", code, out, e)
	}
	code, out, _ = cliRun(t, "status", "--config", cfg, "--json")
	if code != 0 || !strings.Contains(out, `"projections":[{"name":"gifts","store":"default","table":"herald_projection_events","processing":0,"failed":0,"done":3,"dead":1`) {
		t.Fatalf("herald status --json: %d %s", code, out)
	}
}
