package kafka

import (
	"context"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker/brokertest"
	. "github.com/heraldhq/herald/broker/kafka"
)

func TestTail(t *testing.T) {
	cl := startCluster(t, 3, []string{"tail-gifts"})
	p := newPublisher(t, Config{Brokers: []string{cl.addr()}})
	brokertest.RunTail(t, p, "tail-gifts", func(ctx context.Context, ready func(), fn func(herald.Event)) error {
		return Tail(ctx, TailConfig{Conn: Config{Brokers: []string{cl.addr()}}, Topics: []string{"tail-gifts"}}, ready,
			func(_ string, ev herald.Event) { fn(ev) })
	})
}
