package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testAddr = "127.0.0.1:5672"

func testURL(addr string) string { return "amqp://guest:guest@" + addr + "/" }

// requireRabbit skips when the server is down, or fails under CI=true.
func requireRabbit(t testing.TB) {
	t.Helper()
	testenv.RequireTCP(t, "rabbitmq at "+testAddr, testAddr)
}

// fixture is a per-test topic exchange with one durable queue bound to
// "#" (everything) and a channel to read it, all deleted at cleanup.
type fixture struct {
	exchange, queue string
	conn            *amqp.Connection
	ch              *amqp.Channel
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	requireRabbit(t)
	conn, err := amqp.Dial(testURL(testAddr))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	id := herald.NewID()
	f := &fixture{exchange: "herald-test-" + id, queue: "herald-test-" + id, conn: conn, ch: ch}
	must(t, ch.ExchangeDeclare(f.exchange, "topic", false, false, false, false, nil))
	_, err = ch.QueueDeclare(f.queue, true, false, false, false, nil)
	must(t, err)
	must(t, ch.QueueBind(f.queue, "bound.#", f.exchange, false, nil))
	t.Cleanup(func() {
		_, _ = ch.QueueDelete(f.queue, false, false, false)
		_ = ch.ExchangeDelete(f.exchange, false, false)
		conn.Close()
	})
	return f
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// read gets messages for routing key dest from the queue until want are
// there and the queue is empty, or 5s pass.
func (f *fixture) read(t testing.TB, dest string, want int) []amqp.Delivery {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var out []amqp.Delivery
	for time.Now().Before(deadline) {
		d, ok, err := f.ch.Get(f.queue, true)
		must(t, err)
		if !ok {
			if len(out) >= want {
				break
			}
			time.Sleep(20 * time.Millisecond) // polling with a deadline
			continue
		}
		if d.RoutingKey == dest {
			out = append(out, d)
		}
	}
	return out
}

func newPublisher(t testing.TB, cfg Config) *Publisher {
	t.Helper()
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func message(dest, key string, n int) broker.Message {
	return broker.Message{Destination: dest, Event: herald.Event{
		ID: herald.NewID(), Tenant: "app1", Topic: "room", Type: "RoomOpened", PartitionKey: key,
		Headers: map[string]string{"content-type": "application/json"},
		Payload: fmt.Appendf(nil, `{"n":%d}`, n), CreatedAt: time.Now().Truncate(time.Second),
	}}
}

func publish(p *Publisher, msgs ...broker.Message) []broker.Result {
	return publishWithin(p, 5*time.Second, msgs...)
}

// publishWithin publishes msgs with a deadline of d.
func publishWithin(p *Publisher, d time.Duration, msgs ...broker.Message) []broker.Result {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return p.Publish(ctx, msgs)
}

func TestPublishConfirmsAndProperties(t *testing.T) {
	f := newFixture(t)
	p := newPublisher(t, Config{URL: testURL(testAddr), Exchange: f.exchange})
	var msgs []broker.Message
	for i := range 100 {
		msgs = append(msgs, message("bound.room", fmt.Sprint("k", i%5), i))
	}
	for i, r := range publish(p, msgs...) {
		if r.Err != nil || r.Receipt.MessageID != msgs[i].Event.ID {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	got := f.read(t, "bound.room", len(msgs))
	if len(got) != len(msgs) {
		t.Fatalf("queue holds %d messages, want %d", len(got), len(msgs))
	}
	for i, d := range got {
		m := msgs[i].Event
		if d.MessageId != m.ID || d.DeliveryMode != amqp.Persistent || d.ContentType != "application/json" ||
			d.Type != m.Type || !d.Timestamp.Equal(m.CreatedAt) || string(d.Body) != string(m.Payload) {
			t.Fatalf("message %d: %+v", i, d)
		}
		if d.Headers["cloudEvents_id"] != m.ID || d.Headers["cloudEvents_subject"] != m.PartitionKey {
			t.Fatalf("message %d headers: %v", i, d.Headers)
		}
	}
}

func TestUnroutableIsReported(t *testing.T) {
	f := newFixture(t)
	p := newPublisher(t, Config{URL: testURL(testAddr), Exchange: f.exchange})
	res := publish(p, message("bound.a", "", 0), message("nowhere", "", 1), message("bound.b", "", 2))
	if res[0].Err != nil || res[2].Err != nil {
		t.Fatalf("routable messages failed: %v, %v", res[0].Err, res[2].Err)
	}
	if !errors.Is(res[1].Err, ErrUnroutable) || herald.IsPermanent(res[1].Err) {
		t.Fatalf("unroutable: want retryable ErrUnroutable, got %v", res[1].Err)
	}
	lax := newPublisher(t, Config{URL: testURL(testAddr), Exchange: f.exchange, AllowUnroutable: true})
	if res := publish(lax, message("nowhere", "", 3)); res[0].Err != nil {
		t.Fatalf("allow_unroutable: %v", res[0].Err)
	}
}

func TestReconnectsAfterConnectionDrop(t *testing.T) {
	f := newFixture(t)
	px := testenv.StartProxy(t, testAddr)
	p := newPublisher(t, Config{URL: testURL(px.Addr), Exchange: f.exchange})
	if res := publish(p, message("bound.x", "k", 0)); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	px.Stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	res := p.Publish(ctx, []broker.Message{message("bound.x", "k", 1)})
	cancel()
	if res[0].Err == nil || herald.IsPermanent(res[0].Err) {
		t.Fatalf("publish during the outage: want a retryable error, got %v", res[0].Err)
	}
	px.Start(t)
	if res := publish(p, message("bound.x", "k", 2)); res[0].Err != nil {
		t.Fatalf("publish after the proxy is back: %v", res[0].Err)
	}
	// The server cuts the channel on a publish to a deleted exchange; the
	// next batch must get a new one.
	must(t, f.ch.ExchangeDelete(f.exchange, false, false))
	_ = publish(p, message("bound.x", "k", 3))
	must(t, f.ch.ExchangeDeclare(f.exchange, "topic", false, false, false, false, nil))
	must(t, f.ch.QueueBind(f.queue, "bound.#", f.exchange, false, nil))
	if res := publish(p, message("bound.x", "k", 4)); res[0].Err != nil {
		t.Fatalf("publish after a channel error: %v", res[0].Err)
	}
}

func TestNewErrors(t *testing.T) {
	requireRabbit(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	closed := ln.Addr().String()
	ln.Close()
	cases := map[string]Config{
		"url":          {URL: "http://guest:secretpw@x/"},
		"max_payload":  {MaxPayload: -1},
		"dial_timeout": {DialTimeout: -1},
		"heartbeat":    {Heartbeat: -1},
		"exchange":     {URL: testURL(testAddr), Exchange: "herald-no-such-exchange-" + herald.NewID()},
		"connect":      {URL: "amqp://guest:secretpw@" + closed + "/"},
	}
	for want, cfg := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := New(ctx, cfg)
		cancel()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secretpw") {
			t.Errorf("%s: got %v", want, err)
		}
	}
}
