package webhook

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/heraldhq/herald/broker"
)

// Config configures a webhook Publisher. The zero value of every field but
// the secret is a usable default.
type Config struct {
	// Secret is the signing secret in the Standard Webhooks form:
	// "whsec_" followed by the base64 of the key bytes. Required unless
	// SecretEnv names a variable that holds it.
	Secret string `yaml:"secret"`
	// SecretEnv names an environment variable holding the secret; it is
	// read by New when Secret is empty, so the secret stays out of the file.
	SecretEnv string `yaml:"secret_env"`
	// Source is the CloudEvents ce-source. Defaults to broker.DefaultSource.
	Source string `yaml:"source"`
	// MaxPerHost caps concurrent requests to one host (host:port), across
	// all batches. Defaults to 8.
	MaxPerHost int `yaml:"max_per_host"`
	// Timeout caps one request; the batch context's deadline applies too,
	// whichever comes first. Defaults to 30s.
	Timeout time.Duration `yaml:"timeout"`
	// MaxPayload is the largest body sent; a larger one is a permanent
	// error. Defaults to 1 MiB.
	MaxPayload int `yaml:"max_payload"`
	// UserAgent is sent with every request. Defaults to "herald-webhook/1".
	UserAgent string `yaml:"user_agent"`
	// Transport sends the requests. Defaults to a clone of
	// http.DefaultTransport. Not settable from YAML.
	Transport http.RoundTripper `yaml:"-"`
	// Now is the clock for webhook-timestamp. Defaults to time.Now; for tests.
	Now func() time.Time `yaml:"-"`
}

// Defaults used for zero Config fields.
const (
	DefaultMaxPerHost = 8
	DefaultTimeout    = 30 * time.Second
	DefaultMaxPayload = 1 << 20
	DefaultUserAgent  = "herald-webhook/1"
)

// WithDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Source == "" {
		c.Source = broker.DefaultSource
	}
	if c.MaxPerHost == 0 {
		c.MaxPerHost = DefaultMaxPerHost
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// secretKey resolves and decodes the signing key, naming the field at fault.
func (c Config) secretKey() ([]byte, error) {
	secret, field := c.Secret, "secret"
	if secret == "" && c.SecretEnv != "" {
		secret, field = os.Getenv(c.SecretEnv), "secret_env ("+c.SecretEnv+")"
	}
	if secret == "" {
		if c.SecretEnv != "" {
			return nil, fmt.Errorf("webhook: secret_env: environment variable %s is empty or unset", c.SecretEnv)
		}
		return nil, fmt.Errorf("webhook: secret: required (or set secret_env)")
	}
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, fmt.Errorf("webhook: %s: want the form whsec_<base64>", field)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) == 0 {
		// Never echo the secret itself.
		return nil, fmt.Errorf("webhook: %s: the part after whsec_ is not valid base64", field)
	}
	return key, nil
}

// Validate checks the fields after defaults, naming the one at fault. A
// secret must be given (secret, or secret_env naming a variable that New
// reads); a literal secret must be in the whsec_ form.
func (c Config) Validate() error {
	switch {
	case c.Secret == "" && c.SecretEnv == "":
		return fmt.Errorf("webhook: secret: required (or set secret_env)")
	case c.Secret != "":
		if _, err := c.secretKey(); err != nil {
			return err
		}
	}
	switch {
	case c.MaxPerHost < 0:
		return fmt.Errorf("webhook: max_per_host: must be positive, got %d", c.MaxPerHost)
	case c.Timeout < 0:
		return fmt.Errorf("webhook: timeout: must be positive, got %s", c.Timeout)
	case c.MaxPayload < 0:
		return fmt.Errorf("webhook: max_payload: must be positive, got %d", c.MaxPayload)
	}
	return nil
}
