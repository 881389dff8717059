package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/heraldhq/herald/admin"
	"github.com/heraldhq/herald/broker/natsembed"
	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/internal/testenv/rabbitenv"
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

// downBroker is a broker of the test's own that is down when `herald run`
// starts: yaml configures it (on its chosen port), up starts it.
type downBroker struct {
	yaml string
	dest string // the lane's destination; "" means "down.{topic}"
	up   func(t *testing.T)
	// refused says the broker's status error names the refused connection
	// (clients that wrap it in their own words need not).
	refused bool
}

// Rule: `herald run` started while its broker is down, whatever the broker
// type, runs on (no exit 1), reports not ready naming the broker, spends no
// attempt, and once the broker is up becomes ready and delivers, without a
// restart, logging one line for the outage and one for the recovery.
func TestRunStartsWithBrokerDown(t *testing.T) {
	cases := map[string]func(t *testing.T) downBroker{
		"redis": downRedis, "nats": downNATS, "kafka": downKafka,
		"webhook": downWebhook, "rabbitmq": downRabbitMQ, "rocketmq": downRocketMQ,
	}
	for _, name := range []string{"redis", "nats", "kafka", "webhook", "rabbitmq", "rocketmq"} {
		t.Run(name, func(t *testing.T) { runWithBrokerDown(t, cases[name](t)) })
	}
}

func downRedis(t *testing.T) downBroker {
	srv := testenv.NewRedis(t)
	return downBroker{yaml: fmt.Sprintf("{type: redis, url: %q, dial_timeout: 200ms}", srv.URL()),
		up: func(t *testing.T) { srv.Start(t) }, refused: true}
}

func downNATS(t *testing.T) downBroker {
	port := testenv.FreePort(t)
	return downBroker{
		yaml: fmt.Sprintf(`{type: nats, url: "nats://127.0.0.1:%d", stream: DOWN, subjects: ["down.>"], create_stream: true}`, port),
		up: func(t *testing.T) {
			srv, err := natsembed.Start(natsembed.Config{Dir: t.TempDir(), Port: port})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Shutdown)
		}}
}

func downKafka(t *testing.T) downBroker {
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	return downBroker{
		yaml: fmt.Sprintf("{type: kafka, brokers: [%q], dial_timeout: 200ms}", addr),
		up: func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "down.t"),
				kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, addr) }))
			if err != nil {
				t.Fatalf("kfake on %s: %v", addr, err)
			}
			t.Cleanup(c.Close)
		}, refused: true}
}

func downWebhook(t *testing.T) downBroker {
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	return downBroker{
		yaml: "{type: webhook, secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, timeout: 500ms}",
		up: func(t *testing.T) {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
				ReadHeaderTimeout: 5 * time.Second}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
		}, refused: true}.withDestination("http://" + addr + "/hooks/{topic}")
}

func downRabbitMQ(t *testing.T) downBroker {
	node := rabbitenv.NewRabbitNode(t)
	return downBroker{yaml: fmt.Sprintf("{type: rabbitmq, url: %q, allow_unroutable: true, dial_timeout: 200ms}", node.URL()),
		up: func(t *testing.T) { node.Start(t) }, refused: true}
}

func downRocketMQ(t *testing.T) downBroker {
	ns := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	br := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	return downBroker{
		yaml: fmt.Sprintf("{type: rocketmq, name_servers: [%q], group: herald, send_timeout: 1s}", ns),
		up: func(t *testing.T) {
			c, err := rmqfake.New(rmqfake.Options{NameServerAddr: ns, BrokerAddr: br, MaxLongPoll: time.Second})
			if err != nil {
				t.Fatalf("rmqfake on %s/%s: %v", ns, br, err)
			}
			t.Cleanup(c.Close)
		}, refused: true}
}

// withDestination is for brokers whose lane destination is not a subject.
func (b downBroker) withDestination(dest string) downBroker {
	b.dest = dest
	return b
}

func runWithBrokerDown(t *testing.T, b downBroker) {
	dest := b.dest
	if dest == "" {
		dest = "down.{topic}"
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
store: {driver: sqlite, dsn: %s}
brokers:
  down: %s
lanes:
  - {name: main, table: main_outbox, broker: down, destination: %q, poll_interval: 50ms,
     publish_timeout: 500ms, retry: {max_attempts: 2, initial: 50ms}}
`, filepath.Join(dir, "h.db"), b.yaml, dest)), 0o600)
	if code, _, errOut := cliRun(t, "migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: %d %s", code, errOut)
	}
	run := startChild(t, dir, "run", "--config", cfg)
	addr := adminAddr(t, run)
	waitFor(t, 60*time.Second, "/readyz 503 naming the broker", func() bool {
		code, body := readyz(addr)
		return code == http.StatusServiceUnavailable && strings.Contains(body, "broker down unreachable")
	})
	s := openStore(t, dir)
	enqueueMany(t, s, "main_outbox", 5)
	time.Sleep(time.Second) // the relay probes meanwhile; with max_attempts 2 a paying lane would kill
	if st := mainStats(t, s); st.Dead != 0 || st.Retrying != 0 {
		t.Fatalf("events paid for the outage: %+v", st)
	}
	checkStatusShowsDown(t, cfg, b.refused)
	b.up(t)
	waitFor(t, 120*time.Second, "/readyz 200 once the broker is up", func() bool {
		code, _ := readyz(addr)
		return code == http.StatusOK
	})
	waitFor(t, 30*time.Second, "the events delivered", func() bool { return mainStats(t, s).Delivered == 5 })
	if st := mainStats(t, s); st.Dead != 0 {
		t.Errorf("dead events after the broker came up: %+v", st)
	}
	if out := run.stderr.String(); strings.Count(out, "broker unreachable") != 1 || strings.Count(out, "broker recovered") != 1 {
		t.Errorf("want one 'broker unreachable' and one 'broker recovered' line:\n%s", out)
	}
	run.terminate(t)
}

// checkStatusShowsDown runs `herald status` (another process's view, from
// the lane state table) until it shows the broker down, in JSON and text.
func checkStatusShowsDown(t *testing.T, cfg string, refused bool) {
	var last string // the last status seen, for a failure's message
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last herald status --json:\n%s", last)
		}
	})
	waitFor(t, 60*time.Second, "herald status showing the broker down", func() bool {
		code, out, errOut := cliRun(t, "status", "--config", cfg, "--json")
		last = fmt.Sprintf("exit %d\n%s%s", code, out, errOut)
		var st struct {
			Lanes []admin.LaneStatus `json:"lanes"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Lanes) != 1 || st.Lanes[0].Broker == nil {
			return false
		}
		b := st.Lanes[0].Broker
		return b.Name == "down" && !b.Up && !b.Since.IsZero() && b.Error != "" &&
			(!refused || strings.Contains(b.Error, "refused"))
	})
	if _, out, _ := cliRun(t, "status", "--config", cfg); !strings.Contains(out, "broker down down since") {
		t.Errorf("herald status does not show the outage:\n%s", out)
	}
}
