package rabbitmq

import (
	"fmt"
	"testing"

	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/internal/testenv"
)

// TestConformance runs the broker suite against the RabbitMQ server,
// through a proxy the outage test stops and starts.
func TestConformance(t *testing.T) {
	requireRabbit(t)
	brokertest.Run(t, brokertest.Target{
		Guarantees:   (&Publisher{}).Guarantees(),
		MessageID:    true,
		HeaderPrefix: HeaderPrefix,
		New: func(t *testing.T) *brokertest.Setup {
			f := newFixture(t)
			px := testenv.StartProxy(t, testAddr)
			p := newPublisher(t, Config{URL: testURL(px.Addr), Exchange: f.exchange, MaxPayload: 64 << 10})
			return &brokertest.Setup{
				Publisher:   p,
				Destination: func(name string) string { return "bound." + name },
				Read: func(t *testing.T, dest string, want int) []brokertest.Received {
					var out []brokertest.Received
					for _, d := range f.read(t, dest, want) {
						h := map[string]string{}
						for k, v := range d.Headers {
							h[k] = fmt.Sprint(v)
						}
						out = append(out, brokertest.Received{Destination: d.RoutingKey, Headers: h, Body: d.Body, MessageID: d.MessageId})
					}
					return out
				},
				Stop:  func(t *testing.T) { px.Stop(t) },
				Start: func(t *testing.T) { px.Start(t) },
			}
		},
	})
}
