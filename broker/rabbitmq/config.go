package rabbitmq

import (
	"fmt"
	"net/url"
	"time"

	"github.com/heraldhq/herald/broker"
)

// Config configures a RabbitMQ Publisher.
type Config struct {
	// URL is the server: amqp://user:password@host:port/vhost, or amqps://
	// for TLS. Defaults to amqp://guest:guest@127.0.0.1:5672/. It holds a
	// password: it never appears in an error.
	URL string `yaml:"url"`
	// Exchange receives every message, with the message's Destination as
	// the routing key. It must exist (New checks). Empty means the default
	// exchange, where the routing key is a queue name.
	Exchange string `yaml:"exchange"`
	// AllowUnroutable publishes without the mandatory flag, so a message no
	// queue is bound for is confirmed and dropped. Default false: mandatory
	// is set and such a message comes back as a retryable ErrUnroutable.
	AllowUnroutable bool `yaml:"allow_unroutable"`
	// Transient publishes with delivery mode 1 instead of persistent (2).
	// Default false: messages are persistent (they survive a broker restart
	// in durable queues).
	Transient bool `yaml:"transient"`
	// Source is the CloudEvents source. Defaults to broker.DefaultSource.
	Source string `yaml:"source"`
	// MaxPayload is the largest payload accepted; larger is a permanent
	// error. Zero means the server's: the default max_message_size of the
	// version it announces (128 MiB for 3.8–3.13, 16 MiB for 4.x), 16 MiB
	// when it announces none Herald knows (limit.go). Set it when the
	// server's max_message_size is not its version's default.
	MaxPayload int `yaml:"max_payload"`
	// DialTimeout bounds connecting (the batch context bounds it too).
	// Defaults to 10s.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// Heartbeat is the AMQP heartbeat interval, which detects a dead
	// connection. Defaults to 10s.
	Heartbeat time.Duration `yaml:"heartbeat"`
}

// Defaults for zero Config fields.
const (
	DefaultURL = "amqp://guest:guest@127.0.0.1:5672/"
	// DefaultMaxPayload is the limit when neither max_payload nor the
	// server's version gives one.
	DefaultMaxPayload  = 16 << 20
	DefaultDialTimeout = 10 * time.Second
	DefaultHeartbeat   = 10 * time.Second
)

// WithDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.URL == "" {
		c.URL = DefaultURL
	}
	if c.Source == "" {
		c.Source = broker.DefaultSource
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	return c
}

// Validate checks the fields after defaults, naming the one at fault.
func (c Config) Validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case err != nil || (u.Scheme != "amqp" && u.Scheme != "amqps") || u.Host == "":
		// Do not quote the URL: it holds the password.
		return fmt.Errorf("rabbitmq: url: want amqp://user:password@host:port/vhost or amqps://")
	case c.MaxPayload < 0:
		return fmt.Errorf("rabbitmq: max_payload: must be positive, got %d", c.MaxPayload)
	case c.DialTimeout < 0:
		return fmt.Errorf("rabbitmq: dial_timeout: must be positive, got %s", c.DialTimeout)
	case c.Heartbeat < 0:
		return fmt.Errorf("rabbitmq: heartbeat: must be positive, got %s", c.Heartbeat)
	}
	return nil
}

// knownLimit is max_payload, or DefaultMaxPayload when it is left to the
// server and the server is not asked.
func (c Config) knownLimit() int {
	if c.MaxPayload > 0 {
		return c.MaxPayload
	}
	return DefaultMaxPayload
}

// redactedHost is the URL's host for errors and logs.
func (c Config) redactedHost() string {
	u, err := url.Parse(c.URL)
	if err != nil {
		return "?"
	}
	return u.Host
}
