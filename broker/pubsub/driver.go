package pubsub

import (
	"context"

	"github.com/heraldhq/herald/broker"
)

// Driver describes the broker type "pubsub" (Google Cloud Pub/Sub) to
// Herald's config loader. A lane's destination is the topic.
type Driver struct{}

// Type implements broker.Driver.
func (Driver) Type() string { return "pubsub" }

// NewConfig implements broker.Driver.
func (Driver) NewConfig() broker.DriverConfig { return &BrokerConfig{} }

// BrokerConfig is a broker entry of type pubsub; its keys are Config's.
type BrokerConfig struct {
	Config `yaml:",inline"`
}

var (
	_ broker.PayloadLimiter   = (*BrokerConfig)(nil)
	_ broker.Tailer           = (*BrokerConfig)(nil)
	_ broker.SubscriberOpener = (*BrokerConfig)(nil)
	_ broker.Defaulter        = (*BrokerConfig)(nil)
)

// ApplyDefaults implements broker.Defaulter.
func (c *BrokerConfig) ApplyDefaults() { c.Config = c.WithDefaults() }

// Validate implements broker.DriverConfig: outside the emulator, missing
// credentials are an error here, at start.
func (c *BrokerConfig) Validate() error { return c.WithDefaults().Validate() }

// Open implements broker.DriverConfig. The client connects lazily and
// again after an outage, so a Pub/Sub that does not answer at start is
// an outage the relay's ping reports, not an error.
func (c *BrokerConfig) Open(ctx context.Context, _ broker.OpenEnv) (broker.Opened, error) {
	p, err := New(ctx, c.Config)
	if err != nil {
		return broker.Opened{}, err
	}
	return broker.Opened{Publisher: p, Endpoint: c.WithDefaults().endpoint()}, nil
}

// PayloadLimit implements broker.PayloadLimiter: max_payload.
func (c *BrokerConfig) PayloadLimit() int { return c.WithDefaults().MaxPayload }

// Tail implements broker.Tailer: a subscription of its own on the lane's
// topic (--destination when the template depends on the event).
func (c *BrokerConfig) Tail(ctx context.Context, req broker.TailRequest) error {
	topic, err := req.Concrete("topic")
	if err != nil {
		return err
	}
	return Tail(ctx, c.Config, topic, req.Ready("Pub/Sub topic "+topic), req.Fn)
}

// OpenSubscriber implements broker.SubscriberOpener: the subscription
// named req.Group on the topic req.Destination, created (with message
// ordering) if it does not exist.
func (c *BrokerConfig) OpenSubscriber(ctx context.Context, req broker.SubscribeRequest) (broker.Subscriber, error) {
	return NewSubscriber(ctx, SubscriberConfig{Conn: c.Config, Subscription: req.Group, Topic: req.Destination})
}
