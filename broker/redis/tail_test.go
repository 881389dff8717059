package redis

import (
	"context"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker/brokertest"
)

func TestTail(t *testing.T) {
	p := newPublisher(t, Config{})
	s := stream(t)
	brokertest.RunTail(t, p, s, func(ctx context.Context, ready func(), fn func(herald.Event)) error {
		return Tail(ctx, "redis://"+testAddr+"/0", s, "", ready, func(_ string, ev herald.Event) { fn(ev) })
	})
}
