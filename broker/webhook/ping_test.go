package webhook

import (
	"context"
	"net"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// Rule: the ping dials the receiver a destination names, and stays silent
// when the host depends on the event.
func TestPingAddr(t *testing.T) {
	cases := map[string]string{
		"http://127.0.0.1:8080/hooks/{topic}":  "127.0.0.1:8080",
		"https://hooks.example/{event_type}":   "hooks.example:443",
		"http://hooks.example":                 "hooks.example:80",
		"http://{tenant}.hooks.example/events": "",
		"http://hooks.{tenant}/x":              "",
		"{topic}":                              "",
	}
	for dest, want := range cases {
		got, ok := pingAddr(broker.MustParseTemplate(dest))
		if got != want || ok != (want != "") {
			t.Errorf("pingAddr(%q) = %q, %v; want %q", dest, got, ok, want)
		}
	}
}

// Rule: a receiver that refuses connections is unavailable; one that
// listens answers the ping, and it sees no request.
func TestPingDestination(t *testing.T) {
	p, err := New(context.Background(), Config{Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dest := broker.MustParseTemplate("http://" + ln.Addr().String() + "/hooks/{topic}")
	accepted := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		accepted <- buf[:n]
	}()
	if err := p.PingDestination(context.Background(), dest); err != nil {
		t.Fatalf("ping of a listening receiver: %v", err)
	}
	if got := <-accepted; len(got) != 0 {
		t.Errorf("the ping sent %q; it must send nothing", got)
	}
	ln.Close()
	err = p.PingDestination(context.Background(), dest)
	if !herald.IsUnavailable(err) {
		t.Fatalf("ping of a closed port = %v, want an unavailable error", err)
	}
}
