package rocketmq

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/heraldhq/herald/broker"
)

// Tag modes: where a message's tag comes from.
const (
	// TagConstant tags every message with Config.Tag, the legacy mode of
	// the system Herald comes from.
	TagConstant = "constant"
	// TagEventType tags each message with its event type.
	TagEventType = "event_type"
	// TagHeader tags each message with the value of its header
	// Config.TagHeader (on a mapped table, a column the lane's
	// header_columns carries). A message without it is refused for good.
	TagHeader = "header"
)

// Body modes: what the message body holds.
const (
	// BodyRaw sends the payload as is.
	BodyRaw = "raw"
	// BodyEnvelope sends a JSON envelope {tenant, event_id, event_type,
	// occurred_at, payload}; see Envelope.
	BodyEnvelope = "envelope"
)

// Config configures a RocketMQ Publisher.
type Config struct {
	// NameServers are the name servers (host:port). Required.
	NameServers []string `yaml:"name_servers"`
	// Group is the producer group. Defaults to "herald".
	Group string `yaml:"group"`
	// Namespace, when set, prefixes topics and the group (RocketMQ 4.x
	// namespaces / Alibaba Cloud instances).
	Namespace string `yaml:"namespace"`
	// AccessKey and SecretKey authenticate with the broker's ACL. The
	// secret can come from the variable SecretKeyEnv names instead.
	AccessKey    string `yaml:"access_key"`
	SecretKey    string `yaml:"secret_key"`
	SecretKeyEnv string `yaml:"secret_key_env"`
	// TagMode is TagConstant, TagEventType or TagHeader. Defaults to
	// TagEventType.
	TagMode string `yaml:"tag_mode"`
	// Tag is the tag of every message in TagConstant mode (required there).
	Tag string `yaml:"tag"`
	// TagHeader names the header whose value is the tag in TagHeader mode
	// (required there).
	TagHeader string `yaml:"tag_header"`
	// KeyHeaders name event headers (e.g. transaction_id, command_id)
	// whose values join the event id in the message keys, so operators can
	// find a message by any of them. Missing or empty headers are skipped.
	KeyHeaders []string `yaml:"key_headers"`
	// Body is BodyRaw or BodyEnvelope. Defaults to BodyRaw.
	Body string `yaml:"body"`
	// Source is the CloudEvents source. Defaults to broker.DefaultSource.
	Source string `yaml:"source"`
	// MaxPayload is the largest body sent (the envelope, in envelope
	// mode); larger is a permanent error. Defaults to 4 MiB - 64 KiB,
	// under the broker's default maxMessageSize of 4 MiB with room for
	// the properties.
	MaxPayload int `yaml:"max_payload"`
	// SendTimeout bounds one send; the batch context bounds it too.
	// Defaults to 3s.
	SendTimeout time.Duration `yaml:"send_timeout"`
	// Retries is how often the client itself retries a failed send on
	// another broker. Defaults to 2; -1 means none.
	Retries int `yaml:"retries"`
	// Parallel is how many partition keys are sent concurrently in one
	// batch (one key's messages always go one after another). Defaults to 8.
	Parallel int `yaml:"parallel"`
	// LogLevel is the RocketMQ client's log level (debug, info, warn,
	// error). The client's logger is process-wide. Defaults to warn.
	LogLevel string `yaml:"log_level"`
	// Logger receives Herald's own warnings (a slave not available).
	// Defaults to slog.Default(). Not settable from YAML.
	Logger *slog.Logger `yaml:"-"`
}

// Defaults for zero Config fields.
const (
	DefaultGroup       = "herald"
	DefaultMaxPayload  = 4<<20 - 64<<10
	DefaultSendTimeout = 3 * time.Second
	DefaultRetries     = 2
	DefaultParallel    = 8
	DefaultLogLevel    = "warn"
)

// WithDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.TagMode == "" {
		c.TagMode = TagEventType
	}
	if c.Body == "" {
		c.Body = BodyRaw
	}
	if c.Source == "" {
		c.Source = broker.DefaultSource
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.SendTimeout == 0 {
		c.SendTimeout = DefaultSendTimeout
	}
	if c.Retries == 0 {
		c.Retries = DefaultRetries
	}
	if c.Parallel == 0 {
		c.Parallel = DefaultParallel
	}
	if c.LogLevel == "" {
		c.LogLevel = DefaultLogLevel
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.SecretKey == "" && c.SecretKeyEnv != "" {
		c.SecretKey = os.Getenv(c.SecretKeyEnv)
	}
	return c
}

// Validate checks the fields after defaults, naming the one at fault. New
// calls it; the config loader can too.
func (c Config) Validate() error {
	if len(c.NameServers) == 0 {
		return fmt.Errorf("rocketmq: name_servers: at least one host:port is required")
	}
	for i, ns := range c.NameServers {
		if !strings.Contains(ns, ":") {
			return fmt.Errorf("rocketmq: name_servers[%d]: want host:port, got %q", i, ns)
		}
	}
	if err := c.validateMapping(); err != nil {
		return err
	}
	switch {
	case (c.AccessKey == "") != (c.SecretKey == ""):
		return fmt.Errorf("rocketmq: access_key and secret_key: set both or neither (secret_key_env may supply the secret)")
	case c.MaxPayload < 0:
		return fmt.Errorf("rocketmq: max_payload: must be positive, got %d", c.MaxPayload)
	case c.SendTimeout < 0:
		return fmt.Errorf("rocketmq: send_timeout: must be positive, got %s", c.SendTimeout)
	case c.Retries < -1:
		return fmt.Errorf("rocketmq: retries: must be -1 (none) or more, got %d", c.Retries)
	case c.Parallel < 0:
		return fmt.Errorf("rocketmq: parallel: must be positive, got %d", c.Parallel)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("rocketmq: log_level: want debug, info, warn or error, got %q", c.LogLevel)
	}
	return nil
}

// validateMapping checks the fields the message mapping uses.
func (c Config) validateMapping() error {
	switch c.TagMode {
	case TagConstant:
		if c.Tag == "" {
			return fmt.Errorf("rocketmq: tag: required when tag_mode is %q", TagConstant)
		}
		if err := checkTag(c.Tag); err != nil {
			return fmt.Errorf("rocketmq: tag: %w", err)
		}
	case TagEventType:
	case TagHeader:
		if c.TagHeader == "" {
			return fmt.Errorf("rocketmq: tag_header: required when tag_mode is %q", TagHeader)
		}
	default:
		return fmt.Errorf("rocketmq: tag_mode: want %q, %q or %q, got %q", TagConstant, TagEventType, TagHeader, c.TagMode)
	}
	switch c.Body {
	case BodyRaw, BodyEnvelope:
	default:
		return fmt.Errorf("rocketmq: body: want %q or %q, got %q", BodyRaw, BodyEnvelope, c.Body)
	}
	for i, h := range c.KeyHeaders {
		if h == "" {
			return fmt.Errorf("rocketmq: key_headers[%d]: empty header name", i)
		}
	}
	return nil
}

// checkTag refuses tags that break consumers' tag filters ("a || b").
func checkTag(tag string) error {
	if strings.Contains(tag, "||") || strings.ContainsAny(tag, " \t\r\n") {
		return fmt.Errorf("%q contains \"||\" or white space, which tag filters cannot match", tag)
	}
	return nil
}
