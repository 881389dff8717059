package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards a loopback port to a server and can be stopped (listener
// closed, every connection cut) and started again on the same port: to a
// client it is the server's outage, without stopping a server other tests
// share.
type Proxy struct {
	// Addr is the proxy's host:port, fixed once it first started.
	Addr   string
	target string
	ln     net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// StartProxy starts a proxy to target on a free loopback port, stopped
// when the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{target: target, Addr: "127.0.0.1:0", conns: map[net.Conn]struct{}{}}
	p.Start(t)
	t.Cleanup(func() { p.Stop(t) })
	return p
}

// Start listens (again) on the proxy's port.
func (p *Proxy) Start(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		t.Fatalf("proxy listen %s: %v", p.Addr, err)
	}
	p.ln, p.Addr = ln, ln.Addr().String()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.serve(c)
		}
	}()
}

func (p *Proxy) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
	pipe := func(dst, src net.Conn) {
		defer p.wg.Done()
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
	}
	p.wg.Add(2)
	go pipe(server, client)
	go pipe(client, server)
}

// Stop closes the listener and cuts every connection; connecting is then
// refused until Start.
func (p *Proxy) Stop(testing.TB) {
	if p.ln == nil {
		return
	}
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	p.wg.Wait()
	p.ln = nil
}
