package stdout

import (
	"context"
	"os"

	"github.com/heraldhq/herald/broker"
)

// Driver describes the broker type "stdout" (JSON lines on standard
// output) to Herald's config loader.
type Driver struct{}

// Type implements broker.Driver.
func (Driver) Type() string { return "stdout" }

// NewConfig implements broker.Driver.
func (Driver) NewConfig() broker.DriverConfig { return &BrokerConfig{} }

// BrokerConfig is a broker entry of type stdout.
type BrokerConfig struct {
	// Source is the CloudEvents source. Defaults to broker.DefaultSource.
	Source string `yaml:"source"`
}

// Validate implements broker.DriverConfig: every entry is valid.
func (c *BrokerConfig) Validate() error { return nil }

// Open implements broker.DriverConfig. Standard output is not closed.
func (c *BrokerConfig) Open(context.Context, broker.OpenEnv) (broker.Opened, error) {
	p := New(Config{Writer: os.Stdout, Source: c.Source})
	return broker.Opened{Publisher: p, Close: func() error { return nil }, Endpoint: "standard output"}, nil
}
