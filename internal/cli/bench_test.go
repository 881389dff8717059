package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald/broker/natsembed"
)

// Rule: `herald bench` measures the configured store and broker and the
// store's own limit in one run, and reports both.
func TestBenchThroughputAndLatency(t *testing.T) {
	dir := t.TempDir()
	srv, err := natsembed.Start(natsembed.Config{Dir: filepath.Join(dir, "nats"), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	cfg := filepath.Join(dir, "herald.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
store: {driver: sqlite, dsn: %s, synchronous: normal}
brokers:
  events: {type: nats, url: %q, stream: BENCH, subjects: ["bench.>"], create_stream: true}
lanes:
  - {name: main, destination: "bench.{topic}"}
`, filepath.Join(dir, "h.db"), srv.ClientURL())), 0o600)

	code, out, errOut := cliRun(t, "bench", "throughput", "--config", cfg, "--events", "300", "--runs", "1", "--json")
	if code != 0 {
		t.Fatalf("bench throughput: exit %d: %s", code, errOut)
	}
	var tp struct{ Broker, Limit, RatioOfLimit float64 }
	if err := json.Unmarshal([]byte(out), &tp); err != nil || tp.Broker <= 0 || tp.Limit <= 0 || tp.RatioOfLimit <= 0 {
		t.Fatalf("bench throughput --json = %s (%v)", out, err)
	}
	code, out, errOut = cliRun(t, "bench", "latency", "--config", cfg, "--rate", "200", "--duration", "500ms", "--json")
	if code != 0 {
		t.Fatalf("bench latency: exit %d: %s", code, errOut)
	}
	var lat struct{ Events, P50, P99 int64 }
	if err := json.Unmarshal([]byte(out), &lat); err != nil || lat.Events < 50 || lat.P50 <= 0 || lat.P99 < lat.P50 {
		t.Fatalf("bench latency --json = %s (%v)", out, err)
	}
	if code, _, errOut := cliRun(t, "bench", "latency", "--config", cfg, "--producer", "elsewhere"); code != ExitUsage {
		t.Fatalf("a bad --producer must be a usage error, got %d: %s", code, errOut)
	}
	code, out, errOut = cliRun(t, "bench", "throughput", "--config", cfg, "--events", "300", "--runs", "1",
		"--broker-delay", "2ms")
	if code != 0 || !strings.Contains(out, "waits 2ms per batch") {
		t.Fatalf("bench throughput --broker-delay 2ms: exit %d: %s%s", code, out, errOut)
	}
	code, _, errOut = cliRun(t, "bench", "throughput", "--config", cfg, "--broker-delay", "-1s")
	if code != ExitUsage || !strings.Contains(errOut, "--broker-delay") {
		t.Fatalf("a negative --broker-delay must be a usage error naming it, got %d: %s", code, errOut)
	}
	for _, args := range [][]string{{"--on-delivered", "drop"}, {"--on-delivered", "delete"}} {
		code, _, errOut = cliRun(t, append([]string{"bench", "throughput", "--config", cfg}, args...)...)
		if code != ExitUsage || !strings.Contains(errOut, "--on-delivered") {
			t.Fatalf("bench throughput %v must be a usage error naming --on-delivered, got %d: %s", args, code, errOut)
		}
	}
	checkBenchKeepUp(t, cfg)
}

// checkBenchKeepUp: `herald bench keepup` measures the producers alone and
// beside the relay, and returns once the relay delivered every event.
func checkBenchKeepUp(t *testing.T, cfg string) {
	t.Helper()
	code, out, errOut := cliRun(t, "bench", "keepup", "--config", cfg, "--events", "600", "--producers", "3",
		"--tx", "50", "--batch", "100", "--workers", "1", "--json")
	if code != 0 {
		t.Fatalf("bench keepup: exit %d: %s", code, errOut)
	}
	var k struct {
		InsertAlone, InsertWithRelay, Relay float64
		Backlog                             int64
	}
	if err := json.Unmarshal([]byte(out), &k); err != nil || k.InsertAlone <= 0 || k.InsertWithRelay <= 0 ||
		k.Relay < 0 || k.Backlog < 0 || k.Backlog > 600 {
		t.Fatalf("bench keepup --json = %s (%v)", out, err)
	}
	code, _, errOut = cliRun(t, "bench", "keepup", "--config", cfg, "--producers", "0")
	if code != ExitUsage || !strings.Contains(errOut, "--producers") {
		t.Fatalf("--producers 0 must be a usage error naming it, got %d: %s", code, errOut)
	}
}
