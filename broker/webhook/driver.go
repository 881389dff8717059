package webhook

import (
	"context"
	"fmt"
	"net/url"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	secrets "github.com/heraldhq/herald/redact"
)

// Driver describes the broker type "webhook" to Herald's config loader.
// A lane's destination is the URL template.
type Driver struct{}

// Type implements broker.Driver.
func (Driver) Type() string { return "webhook" }

// NewConfig implements broker.Driver.
func (Driver) NewConfig() broker.DriverConfig { return &BrokerConfig{} }

// BrokerConfig is a broker entry of type webhook; its keys are Config's.
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
	return broker.Opened{Publisher: p, Endpoint: "webhooks (URL from each lane's destination)"}, nil
}

// Redacted implements broker.Redactor: the signing secret is hidden.
func (c *BrokerConfig) Redacted() broker.DriverConfig {
	r := *c
	r.Secret = secrets.IfSet(r.Secret)
	return &r
}

// PayloadLimit implements broker.PayloadLimiter.
func (c *BrokerConfig) PayloadLimit() int { return c.WithDefaults().MaxPayload }

// CheckDestination implements broker.DestinationChecker: a webhook lane's
// destination must render to an absolute http(s) URL (placeholders filled
// with a sample value).
func (c *BrokerConfig) CheckDestination(tpl broker.Template) error {
	sample := herald.Event{Topic: "topic", Type: "Type", Tenant: "tenant", PartitionKey: "key"}
	u, err := url.Parse(tpl.Render(sample))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("a webhook destination must be an absolute http(s) URL such as \"https://partner.example/hooks/{event_type}\"")
	}
	return nil
}
