package testenv

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RedisServer is a redis-server of a test's own, on its own port and data
// directory (append-only file, fsync always, so a stop and start keeps
// its streams), stopped when the test ends.
type RedisServer struct {
	// Addr is host:port.
	Addr string
	bin  string
	dir  string
	cmd  *exec.Cmd
}

// StartRedis starts a private redis-server, or skips the test (fails it
// under CI=true) when redis-server is not installed.
func StartRedis(t testing.TB) *RedisServer {
	t.Helper()
	s := NewRedis(t)
	s.Start(t)
	return s
}

// NewRedis picks a free port and data directory for a private
// redis-server without starting it (Start does), for tests of a program
// that starts while its Redis is down.
func NewRedis(t testing.TB) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Unavailable(t, "redis-server is not installed", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &RedisServer{Addr: addr, bin: bin, dir: t.TempDir()}
	t.Cleanup(func() { s.Stop(t) })
	return s
}

// Start starts the server (again) on its port and data directory and
// waits until it answers PING.
func (s *RedisServer) Start(t testing.TB) {
	t.Helper()
	_, port, _ := net.SplitHostPort(s.Addr)
	s.cmd = exec.Command(s.bin, "--port", port, "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--daemonize", "no")
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	WaitFor(t, 20*time.Second, 20*time.Millisecond, "redis-server on "+s.Addr+" answering PING", s.pong)
}

// Stop stops the server (SIGINT: it writes its data and exits).
func (s *RedisServer) Stop(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// URL is the server's redis:// URL for database 0.
func (s *RedisServer) URL() string { return "redis://" + s.Addr + "/0" }

// Port is the server's port.
func (s *RedisServer) Port() int {
	_, port, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(port)
	return n
}

func (s *RedisServer) pong() bool {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}
