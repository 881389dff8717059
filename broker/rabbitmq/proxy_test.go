package rabbitmq

import (
	"io"
	"net"
	"sync"
	"testing"
)

// proxy forwards a loopback port to the RabbitMQ server and can be stopped
// (listener closed, every connection cut) and started again on the same
// port: to the publisher it is a broker outage, without stopping the
// server other tests share.
type proxy struct {
	target string
	addr   string
	ln     net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	p := &proxy{target: target, addr: "127.0.0.1:0", conns: map[net.Conn]struct{}{}}
	p.start(t)
	t.Cleanup(func() { p.stop(t) })
	return p
}

func (p *proxy) start(t *testing.T) {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("proxy listen %s: %v", p.addr, err)
	}
	p.ln, p.addr = ln, ln.Addr().String()
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

func (p *proxy) serve(client net.Conn) {
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

func (p *proxy) stop(*testing.T) {
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
