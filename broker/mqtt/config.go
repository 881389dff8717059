package mqtt

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/heraldhq/herald/broker"
)

// Body modes: what a message's body is (Config.Body).
const (
	// BodyEnvelope is a CloudEvents structured-mode JSON envelope, the
	// CloudEvents MQTT 3.1.1 binding's only mode (envelope.go).
	BodyEnvelope = "envelope"
	// BodyRaw is the payload alone: no attribute travels, so consumers
	// cannot dedupe by event id.
	BodyRaw = "raw"
)

// Config configures a Publisher.
type Config struct {
	// URL is the server: tcp://host:port (ssl:// or tls:// for TLS,
	// ws:// or wss:// for WebSockets). Defaults to tcp://127.0.0.1:1883.
	URL string `yaml:"url"`
	// ClientID is the publisher's client id. Defaults to "herald-" and a
	// random suffix: two clients with one id cut each other off.
	ClientID string `yaml:"client_id"`
	// Username and Password authenticate; PasswordEnv names an
	// environment variable holding the password instead.
	Username    string `yaml:"username"`
	Password    string `yaml:"password"`
	PasswordEnv string `yaml:"password_env"`
	// Retain publishes with the retained flag: the server keeps the last
	// message of each topic for subscribers that come later.
	Retain bool `yaml:"retain"`
	// Body is BodyEnvelope (the default) or BodyRaw.
	Body string `yaml:"body"`
	// Source is the CloudEvents source. Defaults to broker.DefaultSource.
	Source string `yaml:"source"`
	// MaxPayload is the largest payload accepted; larger is a permanent
	// error. Defaults to DefaultMaxPayload. The server's own limit
	// (mosquitto's message_size_limit) must allow the envelope: the
	// payload (base64, 4/3 of it, when it is not compact JSON) plus the
	// attributes and headers.
	MaxPayload int `yaml:"max_payload"`
	// ConnectTimeout bounds connecting. Defaults to 10s.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// KeepAlive is the MQTT keep-alive, which detects a dead connection.
	// Defaults to 30s.
	KeepAlive time.Duration `yaml:"keep_alive"`
}

// Defaults for zero Config fields.
const (
	DefaultURL            = "tcp://127.0.0.1:1883"
	DefaultMaxPayload     = 1 << 20
	DefaultConnectTimeout = 10 * time.Second
	DefaultKeepAlive      = 30 * time.Second
)

// WithDefaults returns a copy of c with zero fields set to their defaults;
// the client id stays empty (a random one is drawn per connection).
func (c Config) WithDefaults() Config {
	if c.URL == "" {
		c.URL = DefaultURL
	}
	if c.Body == "" {
		c.Body = BodyEnvelope
	}
	if c.Source == "" {
		c.Source = broker.DefaultSource
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = DefaultKeepAlive
	}
	return c
}

// Validate checks the fields after defaults, naming the one at fault.
func (c Config) Validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case err != nil || u.Host == "" || !validScheme(u.Scheme):
		// Do not quote the URL: it may hold a password.
		return fmt.Errorf("mqtt: url: want tcp://host:port (or ssl://, tls://, ws://, wss://)")
	case c.Body != BodyEnvelope && c.Body != BodyRaw:
		return fmt.Errorf("mqtt: body: want %s or %s, got %q", BodyEnvelope, BodyRaw, c.Body)
	case c.MaxPayload < 0:
		return fmt.Errorf("mqtt: max_payload: must be positive, got %d", c.MaxPayload)
	case c.MaxPayload > maxPacket:
		return fmt.Errorf("mqtt: max_payload: %d is over MQTT's largest packet (%d bytes)", c.MaxPayload, maxPacket)
	case c.ConnectTimeout < 0:
		return fmt.Errorf("mqtt: connect_timeout: must be positive, got %s", c.ConnectTimeout)
	case c.KeepAlive < 0:
		return fmt.Errorf("mqtt: keep_alive: must be positive, got %s", c.KeepAlive)
	case len(c.ClientID) > 65535:
		return fmt.Errorf("mqtt: client_id: longer than 65535 bytes")
	}
	_, err = c.password()
	return err
}

// maxPacket is the largest MQTT packet's remaining length.
const maxPacket = 268_435_455

func validScheme(s string) bool {
	switch s {
	case "tcp", "mqtt", "ssl", "tls", "mqtts", "ws", "wss":
		return true
	}
	return false
}

// password is Password, or the variable PasswordEnv names, which must be
// set: a missing credential is the configuration's fault, said at start.
func (c Config) password() (string, error) {
	if c.PasswordEnv == "" {
		return c.Password, nil
	}
	v, ok := os.LookupEnv(c.PasswordEnv)
	if !ok || v == "" {
		return "", fmt.Errorf("mqtt: password_env: environment variable %s is empty or unset", c.PasswordEnv)
	}
	return v, nil
}

// clientOptions are the paho options every connection of Herald's shares:
// no automatic reconnect (the publisher dials again at the next batch, the
// subscriber when Receive finds the connection gone), in-order handling.
func (c Config) clientOptions(clientID string) (*paho.ClientOptions, error) {
	pw, err := c.password()
	if err != nil {
		return nil, err
	}
	o := paho.NewClientOptions().AddBroker(c.URL).SetClientID(clientID).
		SetUsername(c.Username).SetPassword(pw).SetProtocolVersion(4).
		SetConnectTimeout(c.ConnectTimeout).SetKeepAlive(c.KeepAlive).SetPingTimeout(c.ConnectTimeout).
		SetWriteTimeout(c.ConnectTimeout).SetAutoReconnect(false).SetConnectRetry(false).SetOrderMatters(true)
	return o, nil
}

// randomID is prefix plus a random suffix, for client ids.
func randomID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// redactedHost is the URL's host, for errors and logs.
func (c Config) redactedHost() string {
	u, err := url.Parse(c.URL)
	if err != nil {
		return "?"
	}
	return u.Host
}
