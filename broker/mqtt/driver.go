package mqtt

import (
	"context"
	"fmt"
	"os"
	"regexp"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/redact"
)

// Driver describes the broker type "mqtt" to Herald's config loader.
type Driver struct{}

// Type implements broker.Driver.
func (Driver) Type() string { return "mqtt" }

// NewConfig implements broker.Driver.
func (Driver) NewConfig() broker.DriverConfig { return &BrokerConfig{} }

// BrokerConfig is a broker entry of type mqtt; its keys are Config's and
// the subscriber's client id.
type BrokerConfig struct {
	Config `yaml:",inline"`
	// SubscriberClientID is the persistent session of a projection's
	// subscriber in this process. Defaults to the projection's name, "-"
	// and the host name: set it where the host name changes at each start.
	SubscriberClientID string `yaml:"subscriber_client_id"`
}

var (
	_ broker.PayloadLimiter   = (*BrokerConfig)(nil)
	_ broker.Redactor         = (*BrokerConfig)(nil)
	_ broker.Tailer           = (*BrokerConfig)(nil)
	_ broker.SubscriberOpener = (*BrokerConfig)(nil)
	_ broker.Defaulter        = (*BrokerConfig)(nil)
)

// ApplyDefaults implements broker.Defaulter.
func (c *BrokerConfig) ApplyDefaults() { c.Config = c.WithDefaults() }

// Validate implements broker.DriverConfig.
func (c *BrokerConfig) Validate() error { return c.WithDefaults().Validate() }

// Open implements broker.DriverConfig. A server that is down at start
// gives a publisher that connects when it answers (broker.OpenLazily).
func (c *BrokerConfig) Open(ctx context.Context, env broker.OpenEnv) (broker.Opened, error) {
	cfg := c.WithDefaults()
	p, err := broker.OpenLazily(ctx, env, cfg.MaxPayload, broker.DialerOf(func(ctx context.Context) (*Publisher, error) {
		return New(ctx, cfg)
	}))
	if err != nil {
		return broker.Opened{}, err
	}
	return broker.Opened{Publisher: p, Endpoint: "MQTT at " + redact.DSN(cfg.URL)}, nil
}

// Redacted implements broker.Redactor: the password is hidden.
func (c *BrokerConfig) Redacted() broker.DriverConfig {
	r := *c
	r.URL = redact.DSN(r.URL)
	r.Password = redact.IfSet(r.Password)
	return &r
}

// PayloadLimit implements broker.PayloadLimiter: max_payload.
func (c *BrokerConfig) PayloadLimit() int { return c.WithDefaults().MaxPayload }

// Tail implements broker.Tailer: the lane's topics (placeholders as +),
// or --destination as a topic filter.
func (c *BrokerConfig) Tail(ctx context.Context, req broker.TailRequest) error {
	filter := req.Destination
	var match *regexp.Regexp
	if filter == "" {
		filter, match = tailFilter(req.Template)
	}
	return Tail(ctx, c.Config, filter, match, req.Ready("MQTT topics "+filter), req.Fn)
}

// OpenSubscriber implements broker.SubscriberOpener: a persistent session
// (subscriber_client_id, else the group and the host name) with a shared
// subscription of group req.Group to the topic filter req.Destination.
func (c *BrokerConfig) OpenSubscriber(ctx context.Context, req broker.SubscribeRequest) (broker.Subscriber, error) {
	id := c.SubscriberClientID
	if id == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("mqtt: subscriber_client_id: not set, and no host name to make one: %w", err)
		}
		id = req.Group + "-" + host
	}
	return NewSubscriber(ctx, SubscriberConfig{Conn: c.Config, ClientID: id, Topic: req.Destination, Group: req.Group})
}
