package faultproxy

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers every line with itself, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func start(t *testing.T) *Proxy {
	t.Helper()
	p, err := Start(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// roundTrip sends a line and waits up to wait for it to come back.
func roundTrip(c net.Conn, wait time.Duration) (time.Duration, error) {
	began := time.Now()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	_, err := bufio.NewReader(c).ReadString('\n')
	return time.Since(began), err
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial %s: %v", p.Addr(), err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestPassForwards(t *testing.T) {
	p := start(t)
	if _, err := roundTrip(dial(t, p), time.Second); err != nil {
		t.Fatalf("pass: no echo through the proxy: %v", err)
	}
}

func TestCutClosesAndRefusesThenPassesAgainOnTheSameAddress(t *testing.T) {
	p := start(t)
	addr := p.Addr()
	c := dial(t, p)
	if _, err := roundTrip(c, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.Set(Cut); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(c, time.Second); err == nil {
		t.Fatal("cut: an open connection still answered")
	}
	if c2, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c2.Close()
		t.Fatal("cut: a new connection was accepted")
	}
	if err := p.Set(Pass); err != nil {
		t.Fatal(err)
	}
	if p.Addr() != addr {
		t.Fatalf("address changed across a cut: %s then %s", addr, p.Addr())
	}
	if _, err := roundTrip(dial(t, p), time.Second); err != nil {
		t.Fatalf("pass after cut: %v", err)
	}
}

func TestDelayHoldsEveryChunk(t *testing.T) {
	p := start(t)
	c := dial(t, p)
	p.SetDelay(150 * time.Millisecond)
	took, err := roundTrip(c, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// One chunk each way: at least twice the delay.
	if took < 300*time.Millisecond {
		t.Fatalf("delay 150ms each way: round trip took %v", took)
	}
	p.SetDelay(0)
	if took, _ = roundTrip(c, time.Second); took > 100*time.Millisecond {
		t.Fatalf("delay removed: round trip still took %v", took)
	}
}

func TestBlackholeAcceptsButForwardsNothing(t *testing.T) {
	p := start(t)
	old := dial(t, p)
	if err := p.Set(Blackhole); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(old, 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("blackhole: open connection: want a timeout, got %v", err)
	}
	c := dial(t, p) // accepted: no refusal, as a partition gives none
	if _, err := roundTrip(c, 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("blackhole: new connection: want a timeout, got %v", err)
	}
	if err := p.Set(Pass); err != nil {
		t.Fatal(err)
	}
	_ = old.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := old.Read(make([]byte, 8)); isTimeout(err) || err == nil {
		t.Fatalf("leaving blackhole: a held connection was not closed (%v)", err)
	}
	if _, err := roundTrip(dial(t, p), time.Second); err != nil {
		t.Fatalf("pass after blackhole: %v", err)
	}
}

func TestCloseEndsEverything(t *testing.T) {
	p := start(t)
	c := dial(t, p)
	if err := p.Set(Blackhole); err != nil {
		t.Fatal(err)
	}
	p.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.Read(make([]byte, 8)); isTimeout(err) {
		t.Fatal("close: a connection stayed open")
	}
	if err := p.Set(Pass); err == nil {
		t.Fatal("Set after Close: no error")
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
