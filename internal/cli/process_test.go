package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// childArgsEnv carries the arguments of a `herald` child process: the test
// binary re-executes itself and runs Main instead of the tests, so tests
// can SIGKILL a real relay process without building a binary first.
const childArgsEnv = "HERALD_TEST_CHILD_ARGS"

func runChild(argsJSON string) {
	var args []string
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		fmt.Fprintln(os.Stderr, "bad child args:", err)
		os.Exit(99)
	}
	os.Exit(Main(context.Background(), testDrivers, args, os.Stdout, os.Stderr, demoCommand))
}

// child is a `herald` process started by a test.
type child struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan error
}

// startChild starts `herald args...` in dir.
func startChild(t *testing.T, dir string, args ...string) *child {
	t.Helper()
	enc, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Dir = dir
	// Port 0: relays started side by side must not fight over the admin port.
	cmd.Env = append(os.Environ(), "HERALD_ADMIN_ADDR=127.0.0.1:0", childArgsEnv+"="+string(enc))
	c := &child{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stdout = c.stderr
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-c.done
		c.done <- nil
	})
	return c
}

// runChildSync runs `herald args...` in dir to completion.
func runChildSync(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	c := startChild(t, dir, args...)
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("herald %v did not finish", args)
	}
	c.done <- nil
	return c.cmd.ProcessState.ExitCode(), c.stderr.String()
}

// terminate sends SIGTERM and waits for a clean exit.
func (c *child) terminate(t *testing.T) {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		c.done <- nil
		if err != nil {
			t.Fatalf("herald run did not exit cleanly on SIGTERM: %v\n%s", err, c.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("herald run did not stop within 30s of SIGTERM\n%s", c.stderr.String())
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *child) kill() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
	c.done <- nil
}

// loggedAt returns when c logged its first line with message msg: the
// time= field of its text log, so a duration measured to it leaves out how
// late the test looked.
func (c *child) loggedAt(t *testing.T, msg string) time.Time {
	t.Helper()
	for _, line := range strings.Split(c.stderr.String(), "\n") {
		if !strings.Contains(line, `msg="`+msg+`"`) && !strings.Contains(line, "msg="+msg+" ") {
			continue
		}
		field, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		at, err := time.Parse(time.RFC3339Nano, field)
		if err != nil || !strings.HasPrefix(line, "time=") {
			t.Fatalf("no time in log line %q: %v", line, err)
		}
		return at
	}
	t.Fatalf("the process never logged %q:\n%s", msg, c.stderr.String())
	return time.Time{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
