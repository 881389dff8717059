// Package nats is Herald's NATS JetStream publisher.
//
// Each message goes to the subject given by its Destination, with the
// payload as the body, the CloudEvents headers (ce-id, ce-type, ...), the
// user headers and Nats-Msg-Id = event id, so the stream drops a republish
// of the same event within its duplicate window (2 minutes by default) and
// the ack says Duplicate.
//
// # Publishing a batch
//
// A batch is published asynchronously on one connection, then every ack is
// awaited until ctx's deadline. NATS keeps the order of messages sent on
// one connection and a stream stores them in arrival order, so messages of
// one partition key are stored in the order given. A message that fails
// before it is sent (too large, not connected) holds back the later
// messages of its key in the batch, so that its retry cannot land behind
// them. A message sent and then rejected by the server cannot hold back its
// successors, which are already on the wire; the server rejects only for
// reasons that hit all of them alike (stream limits) or for timeouts, which
// are ambiguous and so retried and deduped downstream.
//
// # Errors
//
//   - no ack by ctx's deadline, or the connection lost after sending:
//     herald.Ambiguous (the message may be stored; the retry is deduped by
//     Nats-Msg-Id within the window, and by event id in consumers);
//   - payload plus headers over the server's max_payload, or over the
//     stream's max_msg_size: herald.Permanent wrapping
//     herald.ErrPayloadTooLarge;
//   - not connected, no stream for the subject (no responders), any other
//     server error: retryable, with the reason in the text.
//
// # Durability
//
// A JetStream ack means the message is in the stream's file, not that the
// file was synced: the server fsyncs every 2 minutes by default
// (sync_interval). Run the server with sync_interval: always (natsembed:
// SyncAlways) when a power loss must not lose acknowledged messages.
//
// # Reconnects
//
// The connection retries forever (MaxReconnects -1), also when the server
// is down at start (RetryOnFailedConnect). While disconnected, Publish fails
// at once with a retryable error instead of buffering: a buffered message
// would be sent after its Publish call gave up on it.
package nats

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/broker"
)

// ErrClosed is returned for messages published after Close.
var ErrClosed = errors.New("nats: publisher is closed")

// DefaultMaxPayload is the NATS server's default max_payload (1 MiB), used
// until the server has told its own.
const DefaultMaxPayload = 1 << 20

// HeaderAllowance is the part of the server's max_payload that MaxPayload
// keeps for headers: NATS counts headers and body against one limit.
const HeaderAllowance = 4 << 10

// Config configures a Publisher.
type Config struct {
	// URL is the server URL, user and password included if any
	// ("nats://user:pass@host:4222"); several URLs separated by commas.
	// Defaults to "nats://127.0.0.1:4222".
	URL string
	// Stream is the JetStream stream's name. Defaults to "HERALD".
	Stream string
	// Subjects are the stream's subjects when CreateStream creates it.
	// Defaults to ["herald.>"].
	Subjects []string
	// CreateStream creates the stream (file storage) if it does not exist,
	// and adds missing Subjects to it if it does. Without it the stream must
	// exist; publishing to a subject no stream covers fails (retryable).
	CreateStream bool
	// Duplicates is the dedupe window of a stream CreateStream creates.
	// Defaults to 2 minutes, the server's default.
	Duplicates time.Duration
	// Replicas is the number of copies of a stream CreateStream creates, on
	// a cluster (3 survives the loss of one server). Defaults to 1.
	Replicas int
	// Source is the CloudEvents source. Defaults to broker.DefaultSource.
	Source string
	// CredsFile is a NATS credentials file (JWT and nkey seed), if any.
	CredsFile string
	// Token is an authentication token, if any.
	Token string
	// CAFile, CertFile and KeyFile configure TLS: a CA to trust the
	// server, and a client certificate. Any of them turns TLS on.
	CAFile, CertFile, KeyFile string
	// Name is the connection's name, shown by the server. Defaults to "herald".
	Name string
	// ReconnectWait is the pause between reconnect attempts. Defaults to 250ms.
	ReconnectWait time.Duration
	// AckTimeout forgets an ack that never came, so that an abandoned
	// publish does not occupy a pending slot forever. Publish itself waits
	// only until ctx's deadline. Defaults to 30s.
	AckTimeout time.Duration
	// MaxPending bounds the messages in flight awaiting acks, over all
	// concurrent Publish calls. Defaults to 4000.
	MaxPending int
}

// WithDefaults returns a copy of c with the defaults filled in.
func (c Config) WithDefaults() Config {
	if c.URL == "" {
		c.URL = "nats://127.0.0.1:4222"
	}
	if c.Stream == "" {
		c.Stream = "HERALD"
	}
	if len(c.Subjects) == 0 {
		c.Subjects = []string{"herald.>"}
	}
	if c.Duplicates <= 0 {
		c.Duplicates = 2 * time.Minute
	}
	if c.Source == "" {
		c.Source = broker.DefaultSource
	}
	if c.Name == "" {
		c.Name = "herald"
	}
	if c.ReconnectWait <= 0 {
		c.ReconnectWait = 250 * time.Millisecond
	}
	if c.AckTimeout <= 0 {
		c.AckTimeout = 30 * time.Second
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 4000
	}
	return c
}

// Publisher publishes to a JetStream stream. It is safe for concurrent use.
type Publisher struct {
	cfg Config
	nc  *natsgo.Conn
	js  jetstream.JetStream

	// ready is set once the stream is known to exist (CreateStream only).
	ready     atomic.Bool
	readyMu   sync.Mutex // one ensureStream at a time
	window    atomic.Int64
	maxSeen   atomic.Int64 // last max_payload the server announced
	closed    atomic.Bool
	closeOnce sync.Once
}

var (
	_ broker.Publisher = (*Publisher)(nil)
	_ broker.Limiter   = (*Publisher)(nil)
)

// New connects to NATS. A server that is down does not make New fail: the
// connection keeps retrying and Publish fails (retryable) meanwhile. The
// stream is created or checked on the first Publish that finds the server.
func New(ctx context.Context, cfg Config) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	nc, err := natsgo.Connect(cfg.URL, connectOptions(cfg)...)
	if err != nil {
		return nil, fmt.Errorf("nats: connect to %s: %w", redact(cfg.URL), err)
	}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(cfg.MaxPending),
		jetstream.WithPublishAsyncTimeout(cfg.AckTimeout))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats: jetstream: %w", err)
	}
	p := &Publisher{cfg: cfg, nc: nc, js: js}
	p.window.Store(int64(cfg.Duplicates))
	if !cfg.CreateStream {
		p.ready.Store(true)
	} else if nc.IsConnected() {
		// Best effort now, so that a misconfiguration shows at start; a
		// failure is retried by Publish.
		if err := p.ensureStream(ctx); err != nil && !isUnavailable(err) {
			nc.Close()
			return nil, err
		}
	}
	return p, nil
}

func connectOptions(cfg Config) []natsgo.Option {
	opts := []natsgo.Option{
		natsgo.Name(cfg.Name),
		natsgo.MaxReconnects(-1),
		natsgo.ReconnectWait(cfg.ReconnectWait),
		natsgo.RetryOnFailedConnect(true),
		// No reconnect buffer: a message published while disconnected
		// fails now instead of leaving later behind its Publish call's back.
		natsgo.ReconnectBufSize(-1),
	}
	if cfg.CredsFile != "" {
		opts = append(opts, natsgo.UserCredentials(cfg.CredsFile))
	}
	if cfg.Token != "" {
		opts = append(opts, natsgo.Token(cfg.Token))
	}
	if cfg.CAFile != "" {
		opts = append(opts, natsgo.RootCAs(cfg.CAFile))
	}
	if cfg.CertFile != "" || cfg.KeyFile != "" {
		opts = append(opts, natsgo.ClientCert(cfg.CertFile, cfg.KeyFile))
	}
	return opts
}

// Guarantees implements what brokertest checks: dedupe by Nats-Msg-Id
// within the stream's duplicate window, and per-key order.
func (p *Publisher) Guarantees() broker.Guarantees {
	return broker.Guarantees{
		Dedupe:       true,
		DedupeWindow: time.Duration(p.window.Load()),
		KeyOrder:     true,
	}
}

// MaxPayload implements broker.Limiter: the server's max_payload less
// HeaderAllowance (headers count against the same limit). Before the first
// connection it assumes the server default.
func (p *Publisher) MaxPayload() int {
	return p.serverMax() - HeaderAllowance
}

// serverMax is the server's max_payload, remembered across disconnects.
func (p *Publisher) serverMax() int {
	if m := p.nc.MaxPayload(); m > 0 {
		p.maxSeen.Store(m)
		return int(m)
	}
	if m := p.maxSeen.Load(); m > 0 {
		return int(m)
	}
	return DefaultMaxPayload
}

// Close closes the connection. Acks still outstanding are abandoned.
func (p *Publisher) Close() error {
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		p.nc.Close()
	})
	return nil
}
