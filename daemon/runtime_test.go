package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// relayFromYAML builds the runtime a config file describes (brokers as
// YAML, store a fresh SQLite file), relays n events and waits until all
// are delivered: the proof that each broker type is wired from the file.
func relayFromYAML(t *testing.T, brokerYAML, destination string, n int) {
	t.Helper()
	ctx := context.Background()
	f, err := parse([]byte(fmt.Sprintf("store: {driver: sqlite, dsn: %s}\nbrokers:\n  b: %s\nlanes:\n  - {name: main, destination: %q}\n",
		filepath.Join(t.TempDir(), "h.db"), brokerYAML, destination)), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := OpenStore(ctx, f, true)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := rt.StartBrokers(ctx, log); err != nil {
		t.Fatal(err)
	}
	ob, _ := rt.Outbox(&f.Lanes[0])
	tx, _ := rt.Store.DB().Begin()
	for i := range n {
		if err := ob.Enqueue(ctx, tx, herald.Event{Topic: "wired", Type: "Wired", PartitionKey: fmt.Sprint(i % 3), Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	tx.Commit()
	r, err := relay.New(relay.Config{Store: rt.Store, Lanes: rt.Lanes, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- r.Run(rctx) }()
	defer func() { cancel(); <-done }()
	testenv.WaitFor(t, 30*time.Second, 10*time.Millisecond, fmt.Sprintf("%d events delivered", n), func() bool {
		st, err := rt.Store.Stats(ctx, store.Scope{Table: herald.DefaultTable})
		return err == nil && st.Delivered == int64(n)
	})
}

func TestKafkaFromYAML(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "wired"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	relayFromYAML(t, fmt.Sprintf("{type: kafka, brokers: [%q]}", c.ListenAddrs()[0]), "{topic}", 20)
}

func TestRedisFromYAML(t *testing.T) {
	testenv.RequireTCP(t, "Redis", "127.0.0.1:6379")
	relayFromYAML(t, "{type: redis, url: \"redis://127.0.0.1:6379/0\", max_len: 1000}", testenv.Name("herald_wired"), 20)
}

func TestRabbitMQFromYAML(t *testing.T) {
	testenv.RequireTCP(t, "RabbitMQ", "127.0.0.1:5672")
	// The default exchange routes to the queue named by the routing key;
	// allow_unroutable lets this test go without declaring one.
	relayFromYAML(t, "{type: rabbitmq, url: \"amqp://guest:guest@127.0.0.1:5672/\", allow_unroutable: true}", "nowhere", 20)
}

func TestWebhookFromYAML(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("webhook-signature") == "" || !strings.HasPrefix(r.URL.Path, "/hooks/") {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		got.Add(1)
	}))
	defer srv.Close()
	relayFromYAML(t, "{type: webhook, secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}", srv.URL+"/hooks/{event_type}", 20)
	if got.Load() < 20 {
		t.Fatalf("the receiver got %d signed requests, want 20", got.Load())
	}
}
