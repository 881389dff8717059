package rabbitmq

import (
	"context"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker/brokertest"
)

func TestTail(t *testing.T) {
	f := newFixture(t)
	p := newPublisher(t, Config{URL: testURL(testAddr), Exchange: f.exchange})
	brokertest.RunTail(t, p, "bound.gifts", func(ctx context.Context, ready func(), fn func(herald.Event)) error {
		return Tail(ctx, testURL(testAddr), f.exchange, "bound.*", ready, func(_ string, ev herald.Event) { fn(ev) })
	})
}
