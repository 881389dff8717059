package pubsub

import (
	"context"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/internal/testenv"
)

func TestTail(t *testing.T) {
	srv := fake(t)
	topic := testenv.Name("herald-tail")
	createTopic(t, admin(t, srv.Addr), topic)
	p := newPublisher(t, Config{EmulatorHost: srv.Addr})
	cfg := &BrokerConfig{Config: Config{Project: testProject, EmulatorHost: srv.Addr}}
	brokertest.RunTail(t, p, topic, func(ctx context.Context, ready func(), fn func(herald.Event)) error {
		return cfg.Tail(ctx, broker.TailRequest{Template: broker.MustParseTemplate(topic), Watching: func(string) { ready() },
			Fn: func(_ string, ev herald.Event) { fn(ev) }})
	})
}
