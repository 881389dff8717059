package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/internal/testenv"
)

// Rule: on a fresh directory with no config, `herald enqueue`, `herald run`
// and `herald status --json` deliver events end to end to the embedded NATS
// server, which other programs can read on loopback.
func TestEmbeddedDefaultsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	// Nothing creates a database by accident: enqueue before migrate fails,
	// names the command that fixes it and leaves no file behind.
	if code, out := runChildSync(t, dir, "enqueue", "--type", "GiftSent"); code != ExitFailure || !strings.Contains(out, "herald migrate") {
		t.Fatalf("enqueue before migrate: exit %d: %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "herald.db")); !os.IsNotExist(err) {
		t.Fatalf("enqueue before migrate created herald.db (%v)", err)
	}
	if code, out := runChildSync(t, dir, "migrate"); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, out)
	}
	for i := range 3 {
		code, out := runChildSync(t, dir, "enqueue", "--topic", "wallet", "--type", "GiftSent",
			"--key", "u1", "--payload", fmt.Sprintf(`{"n":%d}`, i))
		if code != 0 {
			t.Fatalf("enqueue: exit %d: %s", code, out)
		}
	}
	run := startChild(t, dir, "run")
	waitFor(t, 60*time.Second, "3 delivered", func() bool {
		code, out := runChildSync(t, dir, "status", "--json")
		return code == 0 && strings.Contains(out, `"delivered":3`)
	})
	if !strings.Contains(run.stderr.String(), "embedded NATS JetStream at nats://127.0.0.1:4233") {
		t.Fatalf("herald run must say where the embedded server listens:\n%s", run.stderr.String())
	}
	checkAdmin(t, run.stderr.String())
	msgs := readStream(t, "nats://127.0.0.1:4233", "HERALD", 3)
	for i, m := range msgs {
		if m.Subject != "herald.wallet" || m.Header.Get("ce-type") != "GiftSent" || string(m.Data) != fmt.Sprintf(`{"n":%d}`, i) {
			t.Fatalf("message %d = %s %v %s", i, m.Subject, m.Header, m.Data)
		}
	}
	run.terminate(t)
}

// readStream reads n messages from the start of stream.
func readStream(t *testing.T, url, stream string, n int) []*natsgo.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*natsgo.Msg
	for len(msgs) < n {
		batch, err := cons.Fetch(min(n-len(msgs), 500), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			msgs = append(msgs, &natsgo.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
		}
		if err := batch.Error(); err != nil && got == 0 {
			t.Fatalf("reading stream %s after %d messages: %v", stream, len(msgs), err)
		}
		if ctx.Err() != nil {
			t.Fatalf("stream %s has %d messages, want %d", stream, len(msgs), n)
		}
	}
	return msgs
}

// waitFor polls cond every 20ms (conditions here often run a child
// process) until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, timeout, 20*time.Millisecond, what, cond)
}

// checkAdmin finds the admin endpoint `herald run` announced and checks
// that its metrics count the 3 delivered events and that it is healthy.
func checkAdmin(t *testing.T, stderr string) {
	t.Helper()
	m := regexp.MustCompile(`herald: admin on (http://\S+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("herald run must say where the admin endpoint listens:\n%s", stderr)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(m[1] + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// The observer hears of a batch just after its mark commits.
	waitFor(t, 5*time.Second, "the metrics to count 3 delivered", func() bool {
		code, body := get("/metrics")
		return code == http.StatusOK && strings.Contains(body, `herald_relay_events_total{lane="default",outcome="delivered"} 3`)
	})
	_, metrics := get("/metrics")
	checkDeployedMetrics(t, metrics)
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ok", "/api/lanes": `"delivered":3`,
		"/metrics": `herald_build_info{goversion="go`} {
		if code, body := get(path); code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s = %d %q, want 200 with %s", path, code, body, want)
		}
	}
}

// checkDeployedMetrics checks that every Herald metric the shipped Grafana
// dashboard and alert rules query is one a running relay exports; the
// projection metrics exist only with projections configured, and
// checkDeployedProjectionMetrics checks them on a run that has some.
func checkDeployedMetrics(t *testing.T, exported string) {
	t.Helper()
	checkDeployed(t, exported, func(m string) bool { return !strings.HasPrefix(m, "herald_projection_") })
}

// checkDeployedProjectionMetrics checks the projection metrics the alert
// rules query against a run with projections.
func checkDeployedProjectionMetrics(t *testing.T, exported string) {
	t.Helper()
	checkDeployed(t, exported, func(m string) bool { return strings.HasPrefix(m, "herald_projection_") })
}

// checkDeployed checks the deployed files' metrics that want selects.
func checkDeployed(t *testing.T, exported string, want func(string) bool) {
	t.Helper()
	name := regexp.MustCompile(`herald_[a-z_]+`)
	for _, f := range []string{"grafana/herald.json", "prometheus/herald-alerts.yml"} {
		text, err := os.ReadFile(filepath.Join("..", "..", "deploy", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range name.FindAllString(string(text), -1) {
			m = strings.TrimSuffix(m, "_bucket")
			if want(m) && !strings.Contains(exported, "\n"+m+"{") && !strings.Contains(exported, "\n"+m+" ") &&
				!strings.Contains(exported, "\n"+m+"_bucket{") {
				t.Errorf("deploy/%s queries %s, which herald run does not export", f, m)
			}
		}
	}
}
