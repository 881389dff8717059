package redis

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/internal/testenv"
)

// TestConformance runs the broker suite against the shared Redis server.
func TestConformance(t *testing.T) {
	requireRedis(t)
	brokertest.Run(t, target(func(t *testing.T) (string, func(*testing.T), func(*testing.T)) {
		return testAddr, nil, nil
	}))
}

// TestConformanceOutage runs the suite against a private redis-server that
// the outage test stops and starts again; the shared one must stay up.
func TestConformanceOutage(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testenv.Unavailable(t, "redis-server is not installed", err)
	}
	brokertest.Run(t, target(func(t *testing.T) (string, func(*testing.T), func(*testing.T)) {
		srv := startServer(t, bin)
		return srv.addr, srv.stop, srv.start
	}))
}

// target builds a brokertest.Target whose setups reach the server that
// server returns (address, stop, start).
func target(server func(t *testing.T) (string, func(*testing.T), func(*testing.T))) brokertest.Target {
	return brokertest.Target{
		Guarantees: (&Publisher{}).Guarantees(),
		New: func(t *testing.T) *brokertest.Setup {
			addr, stop, start := server(t)
			p, err := New(context.Background(), Config{URL: "redis://" + addr + "/0", MaxPayload: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close() })
			reader := goredis.NewClient(&goredis.Options{Addr: addr})
			t.Cleanup(func() { _ = reader.Close() })
			prefix := "herald-conf-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			var made []string
			t.Cleanup(func() {
				if len(made) > 0 {
					reader.Del(context.Background(), made...)
				}
			})
			return &brokertest.Setup{
				Publisher: p,
				Destination: func(name string) string {
					s := prefix + "-" + name
					made = append(made, s)
					return s
				},
				Read: func(t *testing.T, dest string, want int) []brokertest.Received { return read(t, reader, dest, want) },
				Stop: stop, Start: start,
			}
		},
	}
}

// read polls the stream until it holds want entries or 5s pass.
func read(t *testing.T, c *goredis.Client, dest string, want int) []brokertest.Received {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		entries, err := c.XRange(context.Background(), dest, "-", "+").Result()
		if err != nil {
			t.Fatalf("XRANGE %s: %v", dest, err)
		}
		if len(entries) >= want || time.Now().After(deadline) {
			out := make([]brokertest.Received, len(entries))
			for i, e := range entries {
				h := map[string]string{}
				for k, v := range e.Values {
					if k != DefaultBodyField {
						h[k] = fmt.Sprint(v)
					}
				}
				out[i] = brokertest.Received{Destination: dest, Headers: h, Body: []byte(fmt.Sprint(e.Values[DefaultBodyField]))}
			}
			return out
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

// server is a private redis-server with its data in a test directory, so a
// stop and start keeps the streams (AOF, fsync always).
type server struct {
	bin, dir, addr string
	cmd            *exec.Cmd
}

func startServer(t *testing.T, bin string) *server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &server{bin: bin, dir: t.TempDir(), addr: addr}
	s.start(t)
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *server) start(t *testing.T) {
	t.Helper()
	_, port, _ := net.SplitHostPort(s.addr)
	s.cmd = exec.Command(s.bin, "--port", port, "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no")
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := goredis.NewClient(&goredis.Options{Addr: s.addr, MaxRetries: -1})
		err := c.Ping(context.Background()).Err()
		c.Close()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s not ready: %v", s.addr, err)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

func (s *server) stop(t *testing.T) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
	s.cmd = nil
}
