package rocketmq

import (
	"context"
	"strings"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/redact"
)

// Driver describes the broker type "rocketmq" to Herald's config loader.
type Driver struct{}

// Type implements broker.Driver.
func (Driver) Type() string { return "rocketmq" }

// NewConfig implements broker.Driver.
func (Driver) NewConfig() broker.DriverConfig { return &BrokerConfig{} }

// BrokerConfig is a broker entry of type rocketmq; its keys are Config's.
type BrokerConfig struct {
	Config `yaml:",inline"`
}

// Validate implements broker.DriverConfig.
func (c *BrokerConfig) Validate() error { return c.WithDefaults().Validate() }

// Open implements broker.DriverConfig; the client logs through env.Logger.
func (c *BrokerConfig) Open(ctx context.Context, env broker.OpenEnv) (broker.Opened, error) {
	cfg := c.Config
	cfg.Logger = env.Logger
	p, err := New(ctx, cfg)
	if err != nil {
		return broker.Opened{}, err
	}
	return broker.Opened{Publisher: p, Endpoint: "RocketMQ name servers " + strings.Join(c.NameServers, ",")}, nil
}

// Redacted implements broker.Redactor: the secret key is hidden.
func (c *BrokerConfig) Redacted() broker.DriverConfig {
	r := *c
	r.SecretKey = redact.IfSet(r.SecretKey)
	return &r
}

// PayloadLimit implements broker.PayloadLimiter.
func (c *BrokerConfig) PayloadLimit() int { return c.WithDefaults().MaxPayload }

// Preview implements broker.Previewer with Map, the mapping the publisher
// sends by.
func (c *BrokerConfig) Preview(m broker.Message) (broker.Preview, error) {
	mp, err := Map(c.WithDefaults(), m)
	if err != nil {
		return broker.Preview{}, err
	}
	return broker.Preview{Destination: mp.Topic, Headers: mp.Properties, Keys: mp.Keys, Tag: mp.Tag,
		PartitionKey: mp.ShardingKey, Body: mp.Body}, nil
}
