package memory_test

import (
	"errors"
	"testing"

	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/broker/memory"
)

func TestConformance(t *testing.T) {
	p := memory.New(memory.Config{MaxPayload: 64 << 10})
	brokertest.Run(t, brokertest.Target{
		Guarantees: p.Guarantees(),
		New: func(t *testing.T) *brokertest.Setup {
			p := memory.New(memory.Config{MaxPayload: 64 << 10})
			t.Cleanup(func() { _ = p.Close() })
			return &brokertest.Setup{
				Publisher:   p,
				Destination: func(name string) string { return "test." + name },
				Read: func(t *testing.T, dest string, want int) []brokertest.Received {
					return received(p.Destination(dest))
				},
				// An outage is the publisher being down; the hooks stand in
				// for stopping a server.
				Stop:  func(t *testing.T) { p.SetDown(errDown) },
				Start: func(t *testing.T) { p.SetDown(nil) },
			}
		},
	})
}

var errDown = errors.New("memory broker: down")

func received(recs []memory.Record) []brokertest.Received {
	out := make([]brokertest.Received, len(recs))
	for i, r := range recs {
		out[i] = brokertest.Received{
			Destination: r.Message.Destination,
			Headers:     r.Headers,
			Body:        r.Message.Event.Payload,
		}
	}
	return out
}
