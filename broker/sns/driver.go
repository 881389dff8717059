package sns

import (
	"context"
	"errors"
	"strings"

	"github.com/heraldhq/herald/broker"
)

// Driver describes the broker type "sns" to Herald's config loader.
type Driver struct{}

// Type implements broker.Driver.
func (Driver) Type() string { return "sns" }

// NewConfig implements broker.Driver.
func (Driver) NewConfig() broker.DriverConfig { return &BrokerConfig{} }

// BrokerConfig is a broker entry of type sns; its keys are Config's. It
// has no Tail (SNS keeps no messages to watch) and no subscriber of its
// own: a projection reads an SQS queue subscribed to the topic.
type BrokerConfig struct {
	Config `yaml:",inline"`
}

var (
	_ broker.Defaulter          = (*BrokerConfig)(nil)
	_ broker.Redactor           = (*BrokerConfig)(nil)
	_ broker.PayloadLimiter     = (*BrokerConfig)(nil)
	_ broker.DestinationChecker = (*BrokerConfig)(nil)
)

// ApplyDefaults implements broker.Defaulter.
func (c *BrokerConfig) ApplyDefaults() { c.Config = c.WithDefaults() }

// Validate implements broker.DriverConfig.
func (c *BrokerConfig) Validate() error { return c.WithDefaults().Validate() }

// Open implements broker.DriverConfig. It calls no AWS API, but fails
// with a *broker.ConfigError when no region or credentials can be found.
func (c *BrokerConfig) Open(ctx context.Context, _ broker.OpenEnv) (broker.Opened, error) {
	p, err := New(ctx, c.Config)
	if err != nil {
		return broker.Opened{}, err
	}
	return broker.Opened{Publisher: p, Endpoint: "Amazon SNS at " + c.Where(p.aws.Config)}, nil
}

// Redacted implements broker.Redactor: the secret key is hidden.
func (c *BrokerConfig) Redacted() broker.DriverConfig {
	r := *c
	r.Settings = r.Settings.Redacted()
	return &r
}

// PayloadLimit implements broker.PayloadLimiter: max_payload, by default
// DefaultMaxPayload (256 KiB less 8 KiB for the attributes).
func (c *BrokerConfig) PayloadLimit() int { return c.WithDefaults().MaxPayload }

// CheckDestination implements broker.DestinationChecker: a destination
// that is not an ARN is a topic name, which needs account_id.
func (c *BrokerConfig) CheckDestination(tpl broker.Template) error {
	if c.AccountID == "" && !strings.HasPrefix(tpl.String(), "arn:") {
		return errors.New("destination: a topic name needs the broker's account_id (or write the topic ARN)")
	}
	return nil
}
