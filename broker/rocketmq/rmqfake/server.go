package rmqfake

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Cluster. The zero value is usable.
type Options struct {
	// Queues is the number of queues of an auto-created topic. Default 4.
	Queues int
	// BrokerName names the one broker. Default "broker-a".
	BrokerName string
	// NameServerAddr and BrokerAddr are the listen addresses. Default
	// 127.0.0.1:0 (a free port).
	NameServerAddr, BrokerAddr string
	// MaxLongPoll caps how long a pull waits for new messages (the client
	// asks for up to 20s). Default 15s; tests that shut a consumer down
	// set it low, because the client leaves a pull pending until answered.
	MaxLongPoll time.Duration

	// tap, when set, is given each request frame as it came off the wire
	// (total length included): the golden tests capture the official
	// client's own bytes with it.
	tap func(frame []byte)
}

// Cluster is one name server and one broker.
type Cluster struct {
	opts  Options
	store *store
	fault faults

	mu      sync.Mutex
	nsAddr  string
	brAddr  string
	lns     []net.Listener
	conns   map[net.Conn]*sync.Mutex // open connections and their write locks
	opaque  atomic.Int32             // request ids of the broker's own requests
	wg      sync.WaitGroup
	running bool
	done    chan struct{}                  // closed by Stop: long polls return
	groups  map[string]map[string]net.Conn // consumer group -> client id -> connection of its heartbeats
}

// New starts a cluster on loopback.
func New(opts Options) (*Cluster, error) {
	if opts.Queues <= 0 {
		opts.Queues = 4
	}
	if opts.BrokerName == "" {
		opts.BrokerName = "broker-a"
	}
	if opts.MaxLongPoll <= 0 {
		opts.MaxLongPoll = 15 * time.Second
	}
	if opts.NameServerAddr == "" {
		opts.NameServerAddr = "127.0.0.1:0"
	}
	if opts.BrokerAddr == "" {
		opts.BrokerAddr = "127.0.0.1:0"
	}
	c := &Cluster{opts: opts, store: newStore(), conns: map[net.Conn]*sync.Mutex{},
		groups: map[string]map[string]net.Conn{}}
	c.fault.cond = sync.NewCond(&c.fault.mu)
	c.nsAddr, c.brAddr = opts.NameServerAddr, opts.BrokerAddr
	if err := c.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

// NameServer is the name server's host:port, for the client's name servers.
func (c *Cluster) NameServer() string { c.mu.Lock(); defer c.mu.Unlock(); return c.nsAddr }

// Broker is the broker's host:port, as the route data names it.
func (c *Cluster) Broker() string { c.mu.Lock(); defer c.mu.Unlock(); return c.brAddr }

// Start (re)opens both listeners on the ports they had (after Stop), with
// the stored messages kept.
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return errors.New("rmqfake: already running")
	}
	ns, err := net.Listen("tcp", c.nsAddr)
	if err != nil {
		return fmt.Errorf("rmqfake: name server listen: %w", err)
	}
	br, err := net.Listen("tcp", c.brAddr)
	if err != nil {
		ns.Close()
		return fmt.Errorf("rmqfake: broker listen: %w", err)
	}
	c.nsAddr, c.brAddr = ns.Addr().String(), br.Addr().String()
	c.lns = []net.Listener{ns, br}
	c.running = true
	c.done = make(chan struct{})
	c.wg.Add(2)
	go c.accept(ns, c.serveNameServer)
	go c.accept(br, c.serveBroker)
	return nil
}

// Stop closes the listeners and every connection and waits for the
// server's goroutines. Messages stay; Start serves them again.
func (c *Cluster) Stop() {
	c.mu.Lock()
	if !c.running {
		c.mu.Unlock()
		return
	}
	c.running = false
	close(c.done)
	for _, ln := range c.lns {
		ln.Close()
	}
	for conn := range c.conns {
		conn.Close()
	}
	c.mu.Unlock()
	c.fault.release() // stalled handlers return (their connection is closed)
	c.wg.Wait()
}

// stopping is closed when Stop begins.
func (c *Cluster) stopping() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

// Close stops the cluster for good.
func (c *Cluster) Close() { c.Stop() }

// handler answers one request; nil means close the connection.
type handler func(req *Command) *Command

func (c *Cluster) accept(ln net.Listener, h handler) {
	defer c.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		if !c.running {
			c.mu.Unlock()
			conn.Close()
			return
		}
		wmu := &sync.Mutex{}
		c.conns[conn] = wmu
		c.wg.Add(1)
		c.mu.Unlock()
		go c.serveConn(conn, wmu, h)
	}
}

// serveConn answers requests in order; one slow request holds its
// connection only (the client opens one connection per address but
// multiplexes by opaque, so answers may be late, never out of frame).
func (c *Cluster) serveConn(conn net.Conn, wmu *sync.Mutex, h handler) {
	defer c.wg.Done()
	defer func() {
		c.mu.Lock()
		delete(c.conns, conn)
		c.mu.Unlock()
		conn.Close()
	}()
	var inflight sync.WaitGroup
	defer inflight.Wait()
	var in io.Reader = conn
	var raw bytes.Buffer
	if c.opts.tap != nil {
		in = io.TeeReader(conn, &raw)
	}
	for {
		raw.Reset()
		req, err := ReadCommand(in)
		if err == nil && c.opts.tap != nil {
			c.opts.tap(bytes.Clone(raw.Bytes()))
		}
		if err != nil {
			// A broker forgets the consumers of a closed channel (a
			// killed process) at once, so the group rebalances without
			// them.
			c.forgetConn(conn)
			return
		}
		if req.IsResponse() {
			continue // the fake sends no requests, so nothing to match
		}
		if req.Code == CodeHeartbeat {
			c.heartbeat(conn, req) // here: the membership belongs to the connection
		}
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			resp := h(req)
			if resp == nil {
				conn.Close()
				return
			}
			frame, err := resp.Encode()
			if err != nil {
				conn.Close()
				return
			}
			wmu.Lock()
			defer wmu.Unlock()
			_, _ = conn.Write(frame)
		}()
	}
}
