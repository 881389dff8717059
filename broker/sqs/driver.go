package sqs

import (
	"context"

	"github.com/heraldhq/herald/broker"
)

// Driver describes the broker type "sqs" to Herald's config loader.
type Driver struct{}

// Type implements broker.Driver.
func (Driver) Type() string { return "sqs" }

// NewConfig implements broker.Driver.
func (Driver) NewConfig() broker.DriverConfig { return &BrokerConfig{} }

// BrokerConfig is a broker entry of type sqs; its keys are Config's. It
// has no Tail: reading a queue takes its messages from its consumers.
type BrokerConfig struct {
	Config `yaml:",inline"`
}

var (
	_ broker.Defaulter        = (*BrokerConfig)(nil)
	_ broker.Redactor         = (*BrokerConfig)(nil)
	_ broker.PayloadLimiter   = (*BrokerConfig)(nil)
	_ broker.SubscriberOpener = (*BrokerConfig)(nil)
)

// ApplyDefaults implements broker.Defaulter.
func (c *BrokerConfig) ApplyDefaults() { c.Config = c.WithDefaults() }

// Validate implements broker.DriverConfig.
func (c *BrokerConfig) Validate() error { return c.WithDefaults().Validate() }

// Open implements broker.DriverConfig. It calls no AWS API (SQS down at
// start is the relay's breaker's business), but fails with a
// *broker.ConfigError when no region or credentials can be found.
func (c *BrokerConfig) Open(ctx context.Context, _ broker.OpenEnv) (broker.Opened, error) {
	p, err := New(ctx, c.Config)
	if err != nil {
		return broker.Opened{}, err
	}
	return broker.Opened{Publisher: p, Endpoint: "Amazon SQS at " + c.Where(p.aws.Config)}, nil
}

// Redacted implements broker.Redactor: the secret key is hidden.
func (c *BrokerConfig) Redacted() broker.DriverConfig {
	r := *c
	r.Settings = r.Settings.Redacted()
	return &r
}

// PayloadLimit implements broker.PayloadLimiter: max_payload, by default
// DefaultMaxPayload (a queue's default 256 KiB less 8 KiB for attributes).
func (c *BrokerConfig) PayloadLimit() int { return c.WithDefaults().MaxPayload }

// OpenSubscriber implements broker.SubscriberOpener: the queue
// req.Destination (a name or URL), which every process of the projection
// reads; the group is the queue itself.
func (c *BrokerConfig) OpenSubscriber(ctx context.Context, req broker.SubscribeRequest) (broker.Subscriber, error) {
	return NewSubscriber(ctx, SubscriberConfig{Settings: c.Settings, Queue: req.Destination, Logger: req.Logger})
}
