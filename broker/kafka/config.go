package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/heraldhq/herald/broker"
)

// Config configures a Kafka Publisher.
type Config struct {
	// Brokers are the seed brokers (host:port). Defaults to 127.0.0.1:9092.
	Brokers []string `yaml:"brokers"`
	// ClientID names the producer in broker logs and quotas. Defaults to
	// "herald".
	ClientID string `yaml:"client_id"`
	// Source is the CloudEvents ce_source. Defaults to broker.DefaultSource.
	Source string `yaml:"source"`
	// MaxPayload is the largest payload accepted; larger is a permanent
	// error. Defaults to 1,000,000 bytes, which leaves room for the key
	// and headers under Kafka's default message.max.bytes (1,048,588).
	MaxPayload int `yaml:"max_payload"`
	// MaxBatchBytes is the largest record batch the producer builds
	// (max.request.size). Defaults to 1,048,576. Must exceed MaxPayload,
	// and must not exceed the topic's max.message.bytes.
	MaxBatchBytes int `yaml:"max_batch_bytes"`
	// AutoCreateTopics lets producing to a missing topic create it (if the
	// brokers allow it). Default false: a missing topic is a retryable error.
	AutoCreateTopics bool `yaml:"auto_create_topics"`
	// DialTimeout bounds connecting to a broker. Defaults to 10s.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// TLS, when set, connects over TLS.
	TLS *TLSConfig `yaml:"tls"`
	// SASL, when set, authenticates with SASL PLAIN or SCRAM.
	SASL *SASLConfig `yaml:"sasl"`
	// DialVia maps broker addresses (host:port, as the seeds are given
	// and as the cluster advertises them) to the address to dial instead:
	// a proxy or tunnel in front of each broker. Empty: none. herald
	// verify sets it for its relays (docs/verify.md); not with TLS, whose
	// check of the broker's name the other address would fail.
	DialVia map[string]string `yaml:"dial_via,omitempty"`
}

// TLSConfig configures TLS to the brokers. The zero value uses the system
// roots and verifies the server name.
type TLSConfig struct {
	// CAFile is a PEM bundle of extra roots to trust.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a PEM client certificate, for mutual TLS.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName overrides the name checked in the broker's certificate.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify disables certificate checks. For tests only.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// SASLConfig configures SASL authentication.
type SASLConfig struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string `yaml:"mechanism"`
	// Username and Password are the credentials. PasswordEnv names an
	// environment variable holding the password instead, read by New.
	Username    string `yaml:"username"`
	Password    string `yaml:"password"`
	PasswordEnv string `yaml:"password_env"`
}

// Defaults for zero Config fields.
const (
	DefaultBroker        = "127.0.0.1:9092"
	DefaultClientID      = "herald"
	DefaultMaxPayload    = 1_000_000
	DefaultMaxBatchBytes = 1 << 20
	DefaultDialTimeout   = 10 * time.Second
)

// WithDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if len(c.Brokers) == 0 {
		c.Brokers = []string{DefaultBroker}
	}
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.Source == "" {
		c.Source = broker.DefaultSource
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	return c
}

// Validate checks the fields after defaults, naming the one at fault.
func (c Config) Validate() error {
	for i, b := range c.Brokers {
		if b == "" || !strings.Contains(b, ":") {
			return fmt.Errorf("kafka: brokers[%d]: want host:port, got %q", i, b)
		}
	}
	switch {
	case c.MaxPayload < 0:
		return fmt.Errorf("kafka: max_payload: must be positive, got %d", c.MaxPayload)
	case c.MaxBatchBytes <= c.MaxPayload || c.MaxBatchBytes > 1<<30:
		return fmt.Errorf("kafka: max_batch_bytes: must be above max_payload (%d) and at most 1 GiB, got %d", c.MaxPayload, c.MaxBatchBytes)
	case c.DialTimeout < 0:
		return fmt.Errorf("kafka: dial_timeout: must be positive, got %s", c.DialTimeout)
	case len(c.DialVia) > 0 && c.TLS != nil:
		return fmt.Errorf("kafka: dial_via: not with tls (the broker's certificate names its own address)")
	}
	if c.SASL != nil {
		if _, err := c.SASL.mechanism(); err != nil {
			return err
		}
	}
	return nil
}

// tlsConfig builds the TLS configuration, naming the field at fault.
func (t *TLSConfig) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // opt-in, documented as test-only
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka: tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka: tls.ca_file: %s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, fmt.Errorf("kafka: tls.cert_file and tls.key_file: set both or neither")
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka: tls.cert_file/key_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// mechanism builds the SASL mechanism, naming the field at fault. The
// password never appears in an error.
func (s *SASLConfig) mechanism() (sasl.Mechanism, error) {
	pass := s.Password
	if pass == "" && s.PasswordEnv != "" {
		pass = os.Getenv(s.PasswordEnv)
	}
	switch {
	case s.Username == "":
		return nil, fmt.Errorf("kafka: sasl.username: required")
	case pass == "":
		return nil, fmt.Errorf("kafka: sasl.password: required (or sasl.password_env naming a set variable)")
	}
	switch strings.ToUpper(s.Mechanism) {
	case "PLAIN":
		return plain.Auth{User: s.Username, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: s.Username, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: s.Username, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("kafka: sasl.mechanism: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got %q", s.Mechanism)
}

// securityOpts are the franz-go options for TLS and SASL (either may be nil).
func securityOpts(tlsCfg *TLSConfig, saslCfg *SASLConfig) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if tlsCfg != nil {
		tc, err := tlsCfg.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if saslCfg != nil {
		mech, err := saslCfg.mechanism()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(mech))
	}
	return opts, nil
}
