package redis

import (
	"fmt"
	"time"

	"github.com/heraldhq/herald/broker"
)

// Config configures a Redis Streams Publisher.
type Config struct {
	// URL is the server: redis://[user:password@]host:port/db, or rediss://
	// for TLS. Defaults to redis://127.0.0.1:6379/0. It holds a password:
	// it never appears in an error.
	URL string `yaml:"url"`
	// MaxLen, when positive, trims each stream to about that many entries
	// on every XADD (MAXLEN ~: Redis trims whole nodes, so the stream may
	// hold somewhat more). Zero keeps everything.
	MaxLen int64 `yaml:"max_len"`
	// BodyField is the entry field holding the payload; the other fields
	// are the headers. Defaults to "payload".
	BodyField string `yaml:"body_field"`
	// Source is the CloudEvents ce-source. Defaults to broker.DefaultSource.
	Source string `yaml:"source"`
	// MaxPayload is the largest payload accepted; larger is a permanent
	// error. Defaults to 1 MiB; at most 512 MiB, Redis's bulk string limit.
	MaxPayload int `yaml:"max_payload"`
	// DialTimeout bounds connecting; the batch context bounds it too.
	// Defaults to 5s.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// PoolSize is the number of connections kept. Defaults to 10.
	PoolSize int `yaml:"pool_size"`
}

// Defaults for zero Config fields, and the hard payload cap.
const (
	DefaultURL         = "redis://127.0.0.1:6379/0"
	DefaultBodyField   = "payload"
	DefaultMaxPayload  = 1 << 20
	DefaultDialTimeout = 5 * time.Second
	DefaultPoolSize    = 10
	maxBulkLen         = 512 << 20
)

// WithDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.URL == "" {
		c.URL = DefaultURL
	}
	if c.BodyField == "" {
		c.BodyField = DefaultBodyField
	}
	if c.Source == "" {
		c.Source = broker.DefaultSource
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.PoolSize == 0 {
		c.PoolSize = DefaultPoolSize
	}
	return c
}

// Validate checks the fields after defaults, naming the one at fault.
func (c Config) Validate() error {
	switch {
	case c.MaxLen < 0:
		return fmt.Errorf("redis: max_len: must be zero or positive, got %d", c.MaxLen)
	case c.MaxPayload < 0 || c.MaxPayload > maxBulkLen:
		return fmt.Errorf("redis: max_payload: must be between 1 and %d, got %d", maxBulkLen, c.MaxPayload)
	case c.DialTimeout < 0:
		return fmt.Errorf("redis: dial_timeout: must be positive, got %s", c.DialTimeout)
	case c.PoolSize < 0:
		return fmt.Errorf("redis: pool_size: must be positive, got %d", c.PoolSize)
	}
	return nil
}
