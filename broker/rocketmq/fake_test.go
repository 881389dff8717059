package rocketmq

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
	"github.com/heraldhq/herald/internal/testenv"
)

// startFake starts an rmqfake cluster, stopped at the end of the test.
func startFake(t testing.TB) *rmqfake.Cluster {
	t.Helper()
	c, err := rmqfake.New(rmqfake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newFakePublisher is a publisher on c; it is closed at the end of the test.
func newFakePublisher(t testing.TB, c *rmqfake.Cluster, cfg Config) *Publisher {
	t.Helper()
	cfg.NameServers = []string{c.NameServer()}
	if cfg.SendTimeout == 0 {
		cfg.SendTimeout = time.Second
	}
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// readFake waits until topic holds want messages (or 5s pass) and returns
// them as the suite reads them: the properties are the headers.
func readFake(t *testing.T, c *rmqfake.Cluster, topic string, want int) []brokertest.Received {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var msgs []rmqfake.Message
	for {
		msgs = c.Messages(topic)
		if len(msgs) >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := make([]brokertest.Received, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, brokertest.Received{Destination: m.Topic, Headers: m.Properties, Body: m.Body})
	}
	return out
}

// TestConformance runs the broker suite through the official client against
// rmqfake; each setup has its own cluster, which the outage test stops and
// starts again on the same ports.
func TestConformance(t *testing.T) {
	brokertest.Run(t, brokertest.Target{
		Guarantees:   (&Publisher{}).Guarantees(),
		HeaderPrefix: HeaderPrefix,
		// The client's schedulers sleep up to 10s before they see Shutdown.
		IgnoreGoroutines: testenv.LeakOptions(),
		New: func(t *testing.T) *brokertest.Setup {
			c := startFake(t)
			p := newFakePublisher(t, c, Config{MaxPayload: 64 << 10, Retries: -1})
			return &brokertest.Setup{
				Publisher:   p,
				Destination: func(name string) string { return "herald_" + name },
				Read:        func(t *testing.T, dest string, want int) []brokertest.Received { return readFake(t, c, dest, want) },
				Stop:        func(t *testing.T) { c.Stop() },
				Start: func(t *testing.T) {
					if err := c.Start(); err != nil {
						t.Fatal(err)
					}
				},
			}
		},
	})
}

var _ broker.Publisher = (*Publisher)(nil)
