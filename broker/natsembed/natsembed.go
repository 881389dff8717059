// Package natsembed runs a NATS server with JetStream inside the Herald
// process, for the default configuration: no broker to install, the
// messages on disk beside the SQLite file.
//
// The server listens on loopback only (other programs on the machine — a
// consumer, the nats CLI — can subscribe), on port 4233 by default so that
// it does not collide with a NATS server already on the standard 4222.
//
// # Durability
//
// A JetStream ack means the message was written to the stream's file, not
// that the file reached the disk: by default the server fsyncs every 2
// minutes, so a power loss (not a process crash) can lose up to 2 minutes
// of acknowledged messages. Set SyncAlways to fsync every write, at a large
// cost in throughput (more than an order of magnitude: medians of ~1-2 k
// instead of ~21-28 k msgs/s for batches of 100 or 1000 1 KiB messages on a
// busy 2-core machine; see BenchmarkPublishBatch in broker/nats), or
// SyncInterval to pick a period in between.
package natsembed

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultPort is the embedded server's port: not 4222, which a standalone
// NATS server likely holds.
const DefaultPort = 4233

// RandomPort, as Config.Port, lets the system pick a free port (tests).
const RandomPort = -1

// Config configures the embedded server. The zero value is Herald's default.
type Config struct {
	// Dir is the JetStream store directory. Defaults to "herald-data".
	Dir string
	// Host is the listen address. Defaults to "127.0.0.1"; keep it a
	// loopback address unless the server should be reachable from the
	// network, which this package does not secure.
	Host string
	// Port is the client port. Defaults to DefaultPort; RandomPort (-1)
	// picks a free one (read it back with Server.Port).
	Port int
	// SyncAlways fsyncs every write before the ack. Off by default.
	SyncAlways bool
	// SyncInterval is the fsync period when SyncAlways is off. Defaults to
	// the server's 2 minutes.
	SyncInterval time.Duration
	// MaxPayload is the largest message (payload and headers) accepted.
	// Defaults to the server's 1 MiB.
	MaxPayload int
	// ReadyTimeout bounds the wait for the server to accept connections.
	// Defaults to 10s.
	ReadyTimeout time.Duration
}

// WithDefaults returns a copy of c with the defaults filled in.
func (c Config) WithDefaults() Config {
	if c.Dir == "" {
		c.Dir = "herald-data"
	}
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = 10 * time.Second
	}
	return c
}

func (c Config) validate() error {
	if c.Port < RandomPort || c.Port > 65535 {
		return fmt.Errorf("natsembed: port %d out of range (1-65535, or -1 for a random port)", c.Port)
	}
	if c.MaxPayload < 0 {
		return fmt.Errorf("natsembed: max payload %d is negative", c.MaxPayload)
	}
	return nil
}

// Server is a running embedded NATS server.
type Server struct {
	ns *server.Server
}

// Start starts a server and waits until it accepts connections.
func Start(cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	opts := &server.Options{
		ServerName:   "herald-embedded",
		Host:         cfg.Host,
		Port:         cfg.Port,
		JetStream:    true,
		StoreDir:     cfg.Dir,
		SyncAlways:   cfg.SyncAlways,
		SyncInterval: cfg.SyncInterval,
		MaxPayload:   int32(cfg.MaxPayload),
		NoSigs:       true, // the host program owns signals
		NoLog:        true,
	}
	if cfg.SyncAlways && opts.SyncInterval == 0 {
		// The server's config parser pairs sync_interval: always with its
		// default interval; do the same so its checks agree.
		opts.SyncInterval = 2 * time.Minute
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsembed: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(cfg.ReadyTimeout) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("natsembed: server on %s not ready within %v (port in use, or store dir %q unusable?)",
			net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)), cfg.ReadyTimeout, cfg.Dir)
	}
	return &Server{ns: ns}, nil
}

// ClientURL is the URL clients connect to, e.g. "nats://127.0.0.1:4233".
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// Port is the port the server listens on (the chosen one for RandomPort).
func (s *Server) Port() int {
	if a, ok := s.ns.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// Shutdown stops the server and waits until it has stopped, its store
// flushed and its port free. It is safe to call more than once.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}
