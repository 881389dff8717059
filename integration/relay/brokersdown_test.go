package relay

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/kafka"
	"github.com/heraldhq/herald/broker/rabbitmq"
	"github.com/heraldhq/herald/broker/redis"
	"github.com/heraldhq/herald/broker/webhook"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/internal/testenv/rabbitenv"
	. "github.com/heraldhq/herald/relay"
)

// Rule: a redis-server of the test's own, stopped for 15s under a lane
// with max_attempts 3, costs no event.
func TestBrokerDownRedis(t *testing.T) {
	srv := testenv.StartRedis(t)
	p, err := redis.New(context.Background(), redis.Config{URL: srv.URL(), DialTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	runBrokerDown(t, outageTarget{
		pub: p, dest: broker.MustParseTemplate("down.{event_type}"),
		stop:  func(t testing.TB) { srv.Stop(t) },
		start: func(t testing.TB) { srv.Start(t) },
		read: func(t *testing.T) []string {
			c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
			defer c.Close()
			entries, err := c.XRange(context.Background(), "down.Happened", "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]string, len(entries))
			for i, e := range entries {
				ids[i] = fmt.Sprint(e.Values["ce-id"])
			}
			return ids
		},
	})
}

// Rule: a Kafka cluster (kfake) closed for 15s and opened again on the
// same port and data directory costs no event.
func TestBrokerDownKafka(t *testing.T) {
	port := testenv.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	dir := t.TempDir()
	var mu sync.Mutex
	var cl *kfake.Cluster
	start := func(t testing.TB) {
		mu.Lock()
		defer mu.Unlock()
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(dir),
			kfake.SeedTopics(1, "down.Happened"),
			kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, addr) }))
		if err != nil {
			t.Fatalf("kfake on %s: %v", addr, err)
		}
		cl = c
	}
	stop := func(testing.TB) {
		mu.Lock()
		defer mu.Unlock()
		if cl != nil {
			cl.Close()
			cl = nil
		}
	}
	start(t)
	t.Cleanup(func() { stop(t) })
	p, err := kafka.New(context.Background(), kafka.Config{Brokers: []string{addr}, DialTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	runBrokerDown(t, outageTarget{
		pub: p, dest: broker.MustParseTemplate("down.{event_type}"), stop: stop, start: start,
		read: func(t *testing.T) []string { return kafkaIDs(t, addr, "down.Happened", 200) },
	})
}

// kafkaIDs reads topic from the start until want records or 10s pass and
// returns their event ids.
func kafkaIDs(t *testing.T, addr, topic string, want int) []string {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ids []string
	for len(ids) < want && ctx.Err() == nil {
		c.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == "ce_id" {
					ids = append(ids, string(h.Value))
				}
			}
		})
	}
	return ids
}

// webhookReceiver is an HTTP receiver on a fixed port that can answer 503
// (a gateway with no upstream) or be closed and opened again.
type webhookReceiver struct {
	addr        string
	unavailable atomic.Bool
	limit       atomic.Int64 // bodies over it get 413 (0: no limit)
	mu          sync.Mutex
	ids         []string
	srv         *http.Server
	done        chan struct{}
}

func startReceiver(t *testing.T) *webhookReceiver {
	r := &webhookReceiver{addr: "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))}
	r.open(t)
	t.Cleanup(func() { r.close(t) })
	return r
}

func (r *webhookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r.unavailable.Load() {
		http.Error(w, "no upstream", http.StatusServiceUnavailable)
		return
	}
	if n := r.limit.Load(); n > 0 && req.ContentLength > n {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		return
	}
	r.mu.Lock()
	r.ids = append(r.ids, req.Header.Get("ce-id"))
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *webhookReceiver) open(t testing.TB) {
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", r.addr, err)
	}
	r.srv, r.done = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}, make(chan struct{})
	go func() { defer close(r.done); _ = r.srv.Serve(ln) }()
}

func (r *webhookReceiver) close(testing.TB) {
	if r.srv == nil {
		return
	}
	_ = r.srv.Close()
	<-r.done
	r.srv = nil
}

func (r *webhookReceiver) received(*testing.T) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ids...)
}

func newWebhook(t *testing.T) broker.Publisher {
	p, err := webhook.New(context.Background(), webhook.Config{Timeout: 500 * time.Millisecond,
		Secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("relay-test-signing-key-32-bytes!"))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// Rule: a webhook receiver answering 503 for 15s costs no event: 503 says
// the receiver is not there, not that the event is bad.
func TestBrokerDownWebhook503(t *testing.T) {
	r := startReceiver(t)
	runBrokerDown(t, outageTarget{
		pub: newWebhook(t), dest: broker.MustParseTemplate("http://" + r.addr + "/hook"),
		stop:  func(testing.TB) { r.unavailable.Store(true) },
		start: func(testing.TB) { r.unavailable.Store(false) },
		read:  r.received,
	})
}

// Rule: a webhook receiver closed (connection refused) for 15s and opened
// again on the same port costs no event.
func TestBrokerDownWebhookClosed(t *testing.T) {
	r := startReceiver(t)
	runBrokerDown(t, outageTarget{
		pub: newWebhook(t), dest: broker.MustParseTemplate("http://" + r.addr + "/hook"),
		stop: r.close, start: r.open, read: r.received,
	})
}

// Rule: a broker that is up but refuses one event (too large: 413) dead-
// letters that event at once while the others flow, and its breaker stays
// closed: a refusal of one event is not an outage.
func TestBrokerRefusingOneEventKeepsBreakerClosed(t *testing.T) {
	r := startReceiver(t)
	e := newEnv(t)
	logs := &testenv.LogLines{}
	health := NewHealth()
	big := events("big", "", 1)[0]
	big.Payload = []byte(fmt.Sprintf(`{"blob":"%0800d"}`, 0))
	limit := 500
	r.limit.Store(int64(limit))
	lane := e.lane(func(l *Lane) {
		l.Publisher, l.Destination = newWebhook(t), broker.MustParseTemplate("http://"+r.addr+"/hook")
		l.Retry = Retry{Initial: 50 * time.Millisecond, Max: time.Second, MaxAttempts: 3}
	})
	e.startWith(Config{Lanes: []Lane{lane}, Logger: slog.New(logs), Health: health})
	e.enqueue(append(events("small", "", 20), big)...)
	waitFor(t, 30*time.Second, "the small events delivered and the big one dead", func() bool {
		st := e.stats()
		return st.Delivered == 20 && st.Dead == 1
	})
	if rec := e.get(big.ID); rec.Attempts != 1 {
		t.Errorf("the refused event took %d attempts, want 1 (a 413 is permanent)", rec.Attempts)
	}
	if n := logs.Count("broker unreachable"); n != 0 || len(health.Unready()) != 0 {
		t.Errorf("a refusal of one event opened the breaker: %d log lines, unready %v", n, health.Unready())
	}
}

// Rule: a RabbitMQ node of the test's own, stopped for 15s and started
// again on the same port and data, costs no event.
func TestBrokerDownRabbitMQ(t *testing.T) {
	node := rabbitenv.StartRabbitNode(t)
	const exchange, queue = "herald.down", "herald.down"
	declareRabbitQueue(t, node.URL(), exchange, queue)
	p, err := rabbitmq.New(context.Background(), rabbitmq.Config{URL: node.URL(), Exchange: exchange,
		DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	runBrokerDown(t, outageTarget{
		pub: p, dest: broker.MustParseTemplate("down.{event_type}"), stop: node.Stop, start: node.Start,
		read: func(t *testing.T) []string { return queueIDs(t, node.URL(), queue) },
	})
}
