package kafka

import (
	"context"

	"github.com/heraldhq/herald/broker"
)

var _ broker.SubscriberOpener = (*BrokerConfig)(nil)

// OpenSubscriber implements broker.SubscriberOpener: consumer group
// req.Group on topic req.Destination, with the entry's TLS and SASL.
func (c *BrokerConfig) OpenSubscriber(ctx context.Context, req broker.SubscribeRequest) (broker.Subscriber, error) {
	return NewSubscriber(ctx, SubscriberConfig{Brokers: c.Brokers, Group: req.Group, Topics: []string{req.Destination},
		TLS: c.TLS, SASL: c.SASL, DialVia: c.DialVia, Logger: req.Logger})
}
