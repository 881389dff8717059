package nats

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/heraldhq/herald/broker"
	secrets "github.com/heraldhq/herald/redact"
)

// Driver describes the broker type "nats" (NATS JetStream) to Herald's
// config loader. Embed starts the server of an entry with an `embedded`
// block (package drivers adapts natsembed.Start); a program that ships none leaves it nil and
// refuses such entries, and then does not link the NATS server.
type Driver struct {
	Embed Embedder
}

// Embedder starts an embedded NATS server for an entry's `embedded` block.
type Embedder func(EmbeddedConfig) (EmbeddedServer, error)

// EmbeddedServer is a running embedded server, as Open needs it.
type EmbeddedServer interface {
	ClientURL() string
	Shutdown()
}

// Type implements broker.Driver.
func (Driver) Type() string { return "nats" }

// NewConfig implements broker.Driver.
func (d Driver) NewConfig() broker.DriverConfig { return &BrokerConfig{embed: d.Embed} }

// BrokerConfig is a broker entry of type nats, as written in YAML: the
// subset of Config a config file sets, and an optional embedded server.
type BrokerConfig struct {
	// URL of the server. Defaults to nats://127.0.0.1:4222; with Embedded,
	// ApplyDefaults sets it to the embedded server's address.
	URL string `yaml:"url"`
	// Stream is the JetStream stream the subjects belong to.
	Stream string `yaml:"stream"`
	// Subjects of the stream, used when creating it. Defaults to ["herald.>"].
	Subjects []string `yaml:"subjects"`
	// CreateStream creates (or updates) the stream at start.
	CreateStream bool `yaml:"create_stream"`
	// Source is the CloudEvents source attribute. Defaults to "herald".
	Source string `yaml:"source"`
	// CredsFile is a NATS credentials file.
	CredsFile string `yaml:"creds_file"`
	// Embedded, when set, runs a NATS server inside Herald and publishes to it.
	Embedded *EmbeddedConfig `yaml:"embedded"`

	embed Embedder
}

// EmbeddedConfig is the `embedded` block of a nats entry.
type EmbeddedConfig struct {
	// Dir holds JetStream's data. Defaults to herald-data.
	Dir string `yaml:"dir"`
	// Host to listen on: loopback by default.
	Host string `yaml:"host"`
	// Port to listen on. Defaults to 4233 (not 4222, so that it does not
	// collide with a NATS server already running); -1 picks a free one.
	Port int `yaml:"port"`
	// SyncAlways fsyncs every message before acking (slow, power-loss safe).
	SyncAlways bool `yaml:"sync_always"`
}

// ApplyDefaults implements broker.Defaulter. With an embedded server the
// URL is that server's (empty when its port is picked at start), so that
// `herald config print` shows the address Herald publishes to.
func (c *BrokerConfig) ApplyDefaults() {
	if c.URL == "" {
		c.URL = "nats://127.0.0.1:4222"
	}
	if len(c.Subjects) == 0 {
		c.Subjects = []string{"herald.>"}
	}
	if c.Source == "" {
		c.Source = broker.DefaultSource
	}
	if e := c.Embedded; e != nil {
		if e.Dir == "" {
			e.Dir = "herald-data"
		}
		if e.Host == "" {
			e.Host = "127.0.0.1"
		}
		if e.Port == 0 {
			e.Port = 4233
		}
		c.URL = ""
		if e.Port != -1 {
			c.URL = e.clientURL()
		}
	}
}

// clientURL is the address of the embedded server, for clients.
func (e *EmbeddedConfig) clientURL() string {
	return "nats://" + net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
}

// Validate implements broker.DriverConfig.
func (c *BrokerConfig) Validate() error {
	if c.Stream == "" {
		return fmt.Errorf("stream is required")
	}
	if slices.Contains(c.Subjects, "") {
		return fmt.Errorf("subjects: an entry is empty")
	}
	if e := c.Embedded; e != nil {
		if e.Port < -1 || e.Port > 65535 {
			return fmt.Errorf("embedded.port: %d is not a port", e.Port)
		}
		if c.embed == nil {
			return fmt.Errorf("embedded: this program has no embedded NATS server; set url instead")
		}
	}
	return nil
}

// Redacted implements broker.Redactor.
func (c *BrokerConfig) Redacted() broker.DriverConfig {
	r := *c
	r.URL = secrets.DSN(r.URL)
	return &r
}

// Open implements broker.DriverConfig: it starts the embedded server
// first if the entry has one.
func (c *BrokerConfig) Open(ctx context.Context, env broker.OpenEnv) (broker.Opened, error) {
	url, endpoint := c.URL, "NATS JetStream at "+secrets.DSN(c.URL)
	var srv EmbeddedServer
	if e := c.Embedded; e != nil {
		var err error
		if srv, err = c.embed(*e); err != nil {
			return broker.Opened{}, fmt.Errorf("embedded NATS server: %w", err)
		}
		url = srv.ClientURL()
		endpoint = "embedded NATS JetStream at " + url + " (data in " + e.Dir + ")"
	}
	p, err := New(ctx, Config{URL: url, Stream: c.Stream, Subjects: c.Subjects,
		CreateStream: c.CreateStream, Source: c.Source, CredsFile: c.CredsFile})
	if err != nil {
		if srv != nil {
			srv.Shutdown()
		}
		return broker.Opened{}, err
	}
	closeAll := func() error {
		err := p.Close()
		if srv != nil {
			srv.Shutdown()
		}
		return err
	}
	return broker.Opened{Publisher: p, Close: closeAll, Endpoint: endpoint, ClientURL: url}, nil
}

// infoTimeout bounds the look-up of a server's max_payload at enqueue: the
// event is committed whether or not the broker is up.
const infoTimeout = 2 * time.Second

// PayloadLimit implements broker.PayloadLimiter: the server's own
// max_payload (from its INFO) less HeaderAllowance; NATS's default 1 MiB
// when the server cannot be reached, and for an embedded server.
func (c *BrokerConfig) PayloadLimit() int {
	max := DefaultMaxPayload
	if c.Embedded == nil {
		opts := []natsgo.Option{natsgo.Timeout(infoTimeout), natsgo.Name("herald enqueue")}
		if c.CredsFile != "" {
			opts = append(opts, natsgo.UserCredentials(c.CredsFile))
		}
		if nc, err := natsgo.Connect(c.URL, opts...); err == nil {
			if m := nc.MaxPayload(); m > 0 {
				max = int(m)
			}
			nc.Close()
		}
	}
	return max - HeaderAllowance
}

// Tail implements broker.Tailer: the lane's subjects, or the whole stream
// when a placeholder shares a token with other text.
func (c *BrokerConfig) Tail(ctx context.Context, req broker.TailRequest) error {
	cfg, what := c.tailConfig(req)
	return Tail(ctx, cfg, req.Ready(what), req.Fn)
}

func (c *BrokerConfig) tailConfig(req broker.TailRequest) (TailConfig, string) {
	url := c.URL
	if e := c.Embedded; e != nil {
		url = e.clientURL()
	}
	cfg := TailConfig{Conn: Config{URL: url, CredsFile: c.CredsFile}, Stream: c.Stream}
	subject := req.PatternOr("")
	if subject == "" {
		return cfg, "NATS stream " + c.Stream
	}
	cfg.Subjects = []string{subject}
	return cfg, fmt.Sprintf("NATS stream %s, subjects %s", c.Stream, subject)
}
