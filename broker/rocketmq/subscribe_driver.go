package rocketmq

import (
	"context"

	"github.com/heraldhq/herald/broker"
)

var _ broker.SubscriberOpener = (*BrokerConfig)(nil)

// OpenSubscriber implements broker.SubscriberOpener: group req.Group on
// topic req.Destination. With event-type tags the broker filters by the
// projection's types.
func (c *BrokerConfig) OpenSubscriber(ctx context.Context, req broker.SubscribeRequest) (broker.Subscriber, error) {
	cfg := c.Config.WithDefaults()
	var tags []string
	if cfg.TagMode == TagEventType {
		tags = req.IncludeTypes
	}
	return NewSubscriber(ctx, SubscriberConfig{NameServers: cfg.NameServers, Group: req.Group, Topic: req.Destination,
		Tags: tags, Body: cfg.Body, Namespace: cfg.Namespace, AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey, LogLevel: cfg.LogLevel})
}
