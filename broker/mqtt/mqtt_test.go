package mqtt

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector/projectortest"
)

func TestMain(m *testing.M) {
	projectortest.CrashChild(openCrashChild)
	goleak.VerifyTestMain(m)
}

// reader is a clean-session client subscribed (QoS 1) to every topic
// under a prefix from its creation on, keeping what arrives by topic: MQTT
// stores nothing for a topic nobody subscribes to, so a test subscribes
// before it publishes.
type reader struct {
	mu   sync.Mutex
	got  map[string][][]byte
	conn paho.Client
}

// newReader subscribes to prefix/# on the server at url.
func newReader(t testing.TB, url, prefix string) *reader {
	t.Helper()
	r := &reader{got: map[string][][]byte{}}
	c, err := dial(context.Background(), Config{URL: url}.WithDefaults(), randomID("herald-test-reader-"),
		func(o *paho.ClientOptions) { o.SetCleanSession(true) })
	if err != nil {
		t.Fatal(err)
	}
	tok := c.Subscribe(prefix+"/#", 1, func(_ paho.Client, m paho.Message) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got[m.Topic()] = append(r.got[m.Topic()], m.Payload())
	})
	<-tok.Done()
	if err := subscribed(tok); err != nil {
		t.Fatal(err)
	}
	r.conn = c
	t.Cleanup(func() { c.Disconnect(100) })
	return r
}

// read waits until topic holds want messages or 3s pass, and returns them.
func (r *reader) read(topic string, want int) [][]byte {
	deadline := time.Now().Add(3 * time.Second)
	for {
		r.mu.Lock()
		n := len(r.got[topic])
		out := append([][]byte(nil), r.got[topic]...)
		r.mu.Unlock()
		if n >= want || time.Now().After(deadline) {
			return out
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}

// received decodes envelopes as brokertest reads them.
func received(t *testing.T, topic string, bodies [][]byte) []brokertest.Received {
	out := make([]brokertest.Received, len(bodies))
	for i, b := range bodies {
		h, payload, err := Envelope(b)
		if err != nil {
			t.Fatalf("message %d on %s is no envelope: %v: %s", i, topic, err, b)
		}
		out[i] = brokertest.Received{Destination: topic, Headers: h, Body: payload}
	}
	return out
}

// requireMQTT is the machine's mosquitto URL (skips, or fails under
// CI=true, when it is down).
func requireMQTT(t testing.TB) string { return testenv.RequireMQTT(t) }

func newPublisher(t testing.TB, cfg Config) *Publisher {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func publish(p broker.Publisher, msgs ...broker.Message) []broker.Result {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.Publish(ctx, msgs)
}

// TestConformance runs the broker suite against the machine's mosquitto,
// through a proxy the outage test stops and starts.
func TestConformance(t *testing.T) {
	url := testenv.RequireMQTT(t)
	addr := strings.TrimPrefix(url, "tcp://")
	brokertest.Run(t, brokertest.Target{
		Guarantees:   (&Publisher{}).Guarantees(),
		HeaderPrefix: HeaderPrefix,
		New: func(t *testing.T) *brokertest.Setup {
			prefix := testenv.Name("herald-conf")
			r := newReader(t, url, prefix)
			px := testenv.StartProxy(t, addr)
			p := newPublisher(t, Config{URL: "tcp://" + px.Addr, MaxPayload: 64 << 10, ConnectTimeout: time.Second})
			return &brokertest.Setup{
				Publisher:   p,
				Destination: func(name string) string { return prefix + "/" + name },
				Read: func(t *testing.T, dest string, want int) []brokertest.Received {
					return received(t, dest, r.read(dest, want))
				},
				Stop:  func(t *testing.T) { px.Stop(t) },
				Start: func(t *testing.T) { px.Start(t) },
			}
		},
	})
}
