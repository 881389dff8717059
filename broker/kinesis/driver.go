package kinesis

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// Driver describes the broker type "kinesis" to Herald's config loader.
type Driver struct{}

// Type implements broker.Driver.
func (Driver) Type() string { return "kinesis" }

// NewConfig implements broker.Driver.
func (Driver) NewConfig() broker.DriverConfig { return &BrokerConfig{} }

// BrokerConfig is a broker entry of type kinesis; its keys are Config's,
// and shard_table for the projections it feeds.
type BrokerConfig struct {
	Config `yaml:",inline"`
	// ShardTable is the table, in a projection's database, of the
	// shards' leases and checkpoints. Defaults to DefaultShardTable.
	ShardTable string `yaml:"shard_table,omitempty"`
}

var (
	_ broker.Defaulter        = (*BrokerConfig)(nil)
	_ broker.Redactor         = (*BrokerConfig)(nil)
	_ broker.PayloadLimiter   = (*BrokerConfig)(nil)
	_ broker.Tailer           = (*BrokerConfig)(nil)
	_ broker.SubscriberOpener = (*BrokerConfig)(nil)
)

// ApplyDefaults implements broker.Defaulter.
func (c *BrokerConfig) ApplyDefaults() {
	c.Config = c.WithDefaults()
	if c.ShardTable == "" {
		c.ShardTable = DefaultShardTable
	}
}

// Validate implements broker.DriverConfig.
func (c *BrokerConfig) Validate() error {
	if c.ShardTable != "" && !tableName.MatchString(c.ShardTable) {
		return fmt.Errorf("shard_table: %q is not a plain SQL table name", c.ShardTable)
	}
	return c.WithDefaults().Validate()
}

// Open implements broker.DriverConfig. It calls no AWS API, but fails
// with a *broker.ConfigError when no region or credentials can be found.
func (c *BrokerConfig) Open(ctx context.Context, _ broker.OpenEnv) (broker.Opened, error) {
	p, err := New(ctx, c.Config)
	if err != nil {
		return broker.Opened{}, err
	}
	return broker.Opened{Publisher: p, Endpoint: "Amazon Kinesis at " + c.Where(p.aws.Config)}, nil
}

// Redacted implements broker.Redactor: the secret key is hidden.
func (c *BrokerConfig) Redacted() broker.DriverConfig {
	r := *c
	r.Settings = r.Settings.Redacted()
	return &r
}

// PayloadLimit implements broker.PayloadLimiter: max_payload, by default
// DefaultMaxPayload.
func (c *BrokerConfig) PayloadLimit() int { return c.WithDefaults().MaxPayload }

// OpenSubscriber implements broker.SubscriberOpener: the stream
// req.Destination, read by the group req.Group, with the shards' leases
// and checkpoints in the projection's database.
func (c *BrokerConfig) OpenSubscriber(ctx context.Context, req broker.SubscribeRequest) (broker.Subscriber, error) {
	if req.DB == nil {
		return nil, errors.New("kinesis: a subscriber needs the projection's database for its checkpoints")
	}
	return NewSubscriber(ctx, SubscriberConfig{Settings: c.Settings, Stream: req.Destination, Group: req.Group,
		DB: req.DB, Dialect: req.Dialect, Table: c.ShardTable, Logger: req.Logger})
}

// Tail implements broker.Tailer: the records a stream receives from now
// on, on every open shard (the lane's stream, or --destination).
func (c *BrokerConfig) Tail(ctx context.Context, req broker.TailRequest) error {
	stream, err := req.Concrete("stream")
	if err != nil {
		return err
	}
	return Tail(ctx, c.Settings, stream, req.Ready("Kinesis stream "+stream), func(ev herald.Event) { req.Fn(stream, ev) })
}
