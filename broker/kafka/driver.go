package kafka

import (
	"context"
	"strings"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/redact"
)

// Driver describes the broker type "kafka" to Herald's config loader.
type Driver struct{}

// Type implements broker.Driver.
func (Driver) Type() string { return "kafka" }

// NewConfig implements broker.Driver.
func (Driver) NewConfig() broker.DriverConfig { return &BrokerConfig{} }

// BrokerConfig is a broker entry of type kafka; its keys are Config's.
type BrokerConfig struct {
	Config `yaml:",inline"`
}

// Validate implements broker.DriverConfig.
func (c *BrokerConfig) Validate() error { return c.WithDefaults().Validate() }

// Open implements broker.DriverConfig.
func (c *BrokerConfig) Open(ctx context.Context, _ broker.OpenEnv) (broker.Opened, error) {
	p, err := New(ctx, c.Config)
	if err != nil {
		return broker.Opened{}, err
	}
	return broker.Opened{Publisher: p, Endpoint: "Kafka at " + strings.Join(c.Brokers, ",")}, nil
}

// Redacted implements broker.Redactor: the SASL password is hidden.
func (c *BrokerConfig) Redacted() broker.DriverConfig {
	r := *c
	if c.SASL != nil {
		s := *c.SASL
		s.Password = redact.IfSet(s.Password)
		r.SASL = &s
	}
	return &r
}

// PayloadLimit implements broker.PayloadLimiter.
func (c *BrokerConfig) PayloadLimit() int { return c.WithDefaults().MaxPayload }

// Tail implements broker.Tailer: one topic, the lane's or --destination.
func (c *BrokerConfig) Tail(ctx context.Context, req broker.TailRequest) error {
	topic, err := req.Concrete("topic")
	if err != nil {
		return err
	}
	return Tail(ctx, TailConfig{Conn: c.Config, Topics: []string{topic}}, req.Ready("Kafka topic "+topic), req.Fn)
}
