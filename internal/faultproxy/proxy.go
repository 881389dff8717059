// Package faultproxy is a TCP proxy that herald verify puts between its relay
// children and the broker or the database, to inject network faults on its
// own connections only: no root, no firewall, nothing outside the process
// tree. It passes bytes through, cuts (every connection closed, new ones
// refused), delays every chunk, or blackholes (accepts and holds
// connections but forwards nothing, as a partition that drops packets
// does).
package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Mode is what the proxy does with traffic.
type Mode int

const (
	// Pass forwards every byte as it comes.
	Pass Mode = iota
	// Cut closes every connection and refuses new ones.
	Cut
	// Blackhole accepts connections and reads from both sides but
	// forwards nothing; the peers see silence until their own timeouts.
	Blackhole
)

// String names the mode as --faults does.
func (m Mode) String() string {
	switch m {
	case Cut:
		return "cut"
	case Blackhole:
		return "blackhole"
	default:
		return "pass"
	}
}

// Proxy forwards one loopback port to a target address. Its methods are
// safe for concurrent use.
type Proxy struct {
	target string
	addr   string

	mu     sync.Mutex
	ln     net.Listener
	mode   Mode
	delay  time.Duration
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Start listens on a free loopback port and forwards it to target
// (host:port).
func Start(target string) (*Proxy, error) {
	p := &Proxy{target: target, addr: "127.0.0.1:0", conns: map[net.Conn]struct{}{}}
	if err := p.listen(); err != nil {
		return nil, err
	}
	return p, nil
}

// Addr is the proxy's host:port, the same for its whole life.
func (p *Proxy) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Mode returns the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// listen opens the listener on p.addr (the port first chosen, after a
// cut) and serves it. A port taken in between is retried for a second.
func (p *Proxy) listen() error {
	var ln net.Listener
	var err error
	for i := 0; i < 20; i++ {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("fault proxy: listen %s: %w", p.addr, err)
	}
	p.ln, p.addr = ln, ln.Addr().String()
	p.wg.Add(1)
	go p.accept(ln)
	return nil
}

func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve connects c to the target and pipes both ways.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client, server) {
		client.Close()
		server.Close()
		return
	}
	p.wg.Add(2)
	go p.pipe(server, client)
	go p.pipe(client, server)
}

// track records a connection pair, unless the proxy was cut or closed
// while it was dialling.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.mode == Cut {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies src to dst chunk by chunk, applying the mode to each.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	defer func() {
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.forward(dst, buf[:n]) {
			return
		}
		if err != nil {
			return
		}
	}
}

// forward writes b to dst after the delay, or drops it when blackholed;
// false when dst is gone.
func (p *Proxy) forward(dst net.Conn, b []byte) bool {
	p.mu.Lock()
	mode, delay := p.mode, p.delay
	p.mu.Unlock()
	if mode == Blackhole {
		return true
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	_, err := dst.Write(b)
	return err == nil || errors.Is(err, io.ErrShortWrite)
}

// SetDelay delays every chunk forwarded by d (0: none), in both
// directions, from now on.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// Set switches the proxy to mode. Leaving Blackhole closes the connections
// it held (bytes were dropped from their streams: the peers must connect
// again); entering Cut closes the listener and every connection, and
// leaving it listens again on the same address.
func (p *Proxy) Set(mode Mode) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("fault proxy: closed")
	}
	old := p.mode
	p.mode = mode
	switch {
	case old == mode:
		return nil
	case mode == Cut:
		p.ln.Close()
		p.closeConns()
		return nil
	case old == Blackhole:
		p.closeConns()
	}
	if old == Cut {
		return p.listen()
	}
	return nil
}

func (p *Proxy) closeConns() {
	for c := range p.conns {
		c.Close()
	}
}

// Close stops the proxy: the listener and every connection are closed and
// its goroutines ended.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.mode != Cut {
		p.ln.Close()
	}
	p.closeConns()
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}
