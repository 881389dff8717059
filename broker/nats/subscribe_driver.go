package nats

import (
	"context"

	"github.com/heraldhq/herald/broker"
)

var _ broker.SubscriberOpener = (*BrokerConfig)(nil)

// OpenSubscriber implements broker.SubscriberOpener: a durable consumer
// named req.Group on the entry's stream, filtered to req.Destination.
func (c *BrokerConfig) OpenSubscriber(ctx context.Context, req broker.SubscribeRequest) (broker.Subscriber, error) {
	url := req.ClientURL
	if url == "" {
		url = c.URL
	}
	return NewSubscriber(ctx, SubscriberConfig{URL: url, CredsFile: c.CredsFile, Stream: c.Stream,
		Durable: req.Group, FilterSubjects: []string{req.Destination}})
}
