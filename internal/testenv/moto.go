package testenv

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// AWS test credentials and region: the emulators accept any.
const (
	AWSRegion    = "us-east-1"
	AWSAccessKey = "test"
	AWSSecretKey = "test"
)

// NoAWSMetadata keeps the AWS SDK of a test process from asking the EC2
// instance metadata service (a link-local address off this machine) for
// credentials or a region: tests reach loopback only.
func NoAWSMetadata() {
	_ = os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// MotoServer is a moto_server of the test's own (the AWS emulator of the
// Python package moto, which speaks SQS's JSON protocol, SNS with its
// fan-out to SQS, and Kinesis) on a free loopback port, in memory, stopped
// when the test ends.
type MotoServer struct {
	// URL is the endpoint: http://127.0.0.1:port.
	URL    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// motoBootTimeout bounds a start (Python imports take a few seconds on a
// busy machine).
const motoBootTimeout = 60 * time.Second

// StartMoto starts a moto_server, or skips the test (fails it under
// CI=true) when moto_server is not installed (HERALD_TEST_MOTO_SERVER
// names another program).
func StartMoto(t testing.TB) *MotoServer {
	t.Helper()
	NoAWSMetadata()
	bin, err := exec.LookPath(env("HERALD_TEST_MOTO_SERVER", "moto_server"))
	if err != nil {
		Unavailable(t, "moto_server (the Python package moto, server extra) is not installed", err)
	}
	port := FreePort(t)
	s := &MotoServer{URL: fmt.Sprintf("http://127.0.0.1:%d", port), exited: make(chan struct{})}
	s.cmd = exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	// It logs every request: nothing a test reads.
	s.cmd.Stdout, s.cmd.Stderr = io.Discard, io.Discard
	orphanGuard(s.cmd)
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start moto_server: %v", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() { s.stop() })
	deadline := time.Now().Add(motoBootTimeout)
	for !s.up() {
		select {
		case <-s.exited:
			t.Fatalf("moto_server exited at start: %v", s.cmd.ProcessState)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto_server on %s not answering after %v", s.URL, motoBootTimeout)
		}
	}
	return s
}

// up reports whether the server answers its own API.
func (s *MotoServer) up() bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(s.URL + "/moto-api/data.json")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (s *MotoServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}
