package rabbitmq

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/redact"
)

// Driver describes the broker type "rabbitmq" to Herald's config loader.
type Driver struct{}

// Type implements broker.Driver.
func (Driver) Type() string { return "rabbitmq" }

// NewConfig implements broker.Driver.
func (Driver) NewConfig() broker.DriverConfig { return &BrokerConfig{} }

// BrokerConfig is a broker entry of type rabbitmq; its keys are Config's.
type BrokerConfig struct {
	Config `yaml:",inline"`
}

// Validate implements broker.DriverConfig.
func (c *BrokerConfig) Validate() error { return c.WithDefaults().Validate() }

// Open implements broker.DriverConfig. A broker that is down at start
// gives a publisher that connects when it answers (broker.OpenLazily).
func (c *BrokerConfig) Open(ctx context.Context, env broker.OpenEnv) (broker.Opened, error) {
	cfg := c.Config
	p, err := broker.OpenLazily(ctx, env, cfg.knownLimit(), broker.DialerOf(func(ctx context.Context) (*Publisher, error) {
		return New(ctx, cfg)
	}))
	if err != nil {
		return broker.Opened{}, err
	}
	return broker.Opened{Publisher: p, Endpoint: "RabbitMQ at " + redact.DSN(c.URL)}, nil
}

// Redacted implements broker.Redactor: the URL's password is hidden.
func (c *BrokerConfig) Redacted() broker.DriverConfig {
	r := *c
	r.URL = redact.DSN(r.URL)
	return &r
}

// PayloadLimit implements broker.PayloadLimiter: max_payload, else the
// default max_message_size of the version the server announces (it does
// not announce its configured one: limit.go), else DefaultMaxPayload when
// it cannot be reached.
func (c *BrokerConfig) PayloadLimit() int {
	cfg := c.WithDefaults()
	if cfg.MaxPayload == 0 {
		if n := serverPayloadLimit(cfg); n > 0 {
			return n
		}
	}
	return cfg.knownLimit()
}

// Tail implements broker.Tailer: the lane's routing keys as a pattern
// (every key, "#", when a placeholder shares a word), or --destination.
func (c *BrokerConfig) Tail(ctx context.Context, req broker.TailRequest) error {
	cfg := c.WithDefaults()
	pattern := req.PatternOr("#")
	what := fmt.Sprintf("exchange %s, routing keys %q", cfg.Exchange, pattern)
	return Tail(ctx, cfg.URL, cfg.Exchange, pattern, req.Ready(what), req.Fn)
}
