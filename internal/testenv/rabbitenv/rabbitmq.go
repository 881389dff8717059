// Package rabbitenv starts RabbitMQ servers of a test's own. It is apart
// from testenv so that only the tests that need a RabbitMQ node load the
// AMQP client (a test of store/mysql, say, does not).
package rabbitenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
)

// debianRabbitScripts holds the unwrapped RabbitMQ scripts of the Debian
// and Ubuntu package. Its rabbitmq-server on PATH is a wrapper that, run as
// root, switches to the rabbitmq user, who cannot write the test's temp dir.
const debianRabbitScripts = "/usr/lib/rabbitmq/bin"

// RabbitNode is a RabbitMQ server of the test's own: its own node name,
// AMQP and distribution ports on loopback, Erlang cookie, configuration,
// data and logs under a temp dir, no plugins. It runs as a child process of
// the test (not detached), so the test can stop and restart it; the shared
// server on 5672 is never touched. It registers with the machine's epmd
// (or starts one, which outlives the test, as epmd does).
type RabbitNode struct {
	bin, dir, name string
	port, distPort int
	cmd            *exec.Cmd
	exited         chan struct{}
	console        bytes.Buffer // the server's stdout and stderr, for failures
	// fixed is set once the node booted or its URL was handed out: from
	// then on its ports are the node's for good.
	fixed bool
}

// rabbitBootTimeout bounds a start: a boot takes ~10s on a busy machine.
const rabbitBootTimeout = 90 * time.Second

// StartRabbitNode boots a node and stops it when the test ends. Without
// rabbitmq-server on PATH the test skips, or fails when CI=true.
func StartRabbitNode(t testing.TB) *RabbitNode {
	t.Helper()
	n := NewRabbitNode(t)
	n.Start(t)
	return n
}

// NewRabbitNode prepares a node (ports, configuration, data directory)
// without booting it (Start does), for tests of a program that starts
// while its RabbitMQ is down. The node is stopped when the test ends.
func NewRabbitNode(t testing.TB) *RabbitNode {
	t.Helper()
	bin, err := exec.LookPath("rabbitmq-server")
	if err != nil {
		testenv.Unavailable(t, "rabbitmq-server is not on PATH", err)
	}
	if direct := filepath.Join(debianRabbitScripts, "rabbitmq-server"); testenv.FileExists(direct) {
		bin = direct
	}
	n := &RabbitNode{bin: bin, dir: t.TempDir(), name: "herald-test-" + herald.NewID() + "@localhost",
		port: testenv.FreePort(t), distPort: testenv.FreePort(t)}
	n.writeConfig(t)
	t.Cleanup(func() { n.Stop(t) })
	return n
}

// URL is the node's AMQP URL; from this call on its port stays.
func (n *RabbitNode) URL() string {
	n.fixed = true
	return n.url()
}

func (n *RabbitNode) url() string { return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", n.port) }

func (n *RabbitNode) path(name string) string { return filepath.Join(n.dir, name) }

// writeConfig writes the files that replace the machine's: an empty env
// file (the machine's sets the shared node's name), a config file listening
// on the node's port only, and an empty plugin list.
func (n *RabbitNode) writeConfig(t testing.TB) {
	t.Helper()
	files := map[string]string{
		"rabbitmq-env.conf": "",
		"rabbitmq.conf":     fmt.Sprintf("listeners.tcp.local = 127.0.0.1:%d\n", n.port),
		"enabled_plugins":   "[].\n",
	}
	for name, text := range files {
		if err := os.WriteFile(n.path(name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func (n *RabbitNode) env() []string {
	return append(os.Environ(),
		"HOME="+n.dir, // Erlang keeps its cookie in $HOME/.erlang.cookie
		"RABBITMQ_CONF_ENV_FILE="+n.path("rabbitmq-env.conf"),
		"RABBITMQ_CONFIG_FILE="+n.path("rabbitmq.conf"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+n.path("enabled_plugins"),
		"RABBITMQ_MNESIA_BASE="+n.path("mnesia"),
		"RABBITMQ_LOG_BASE="+n.path("log"),
		"RABBITMQ_PLUGINS_EXPAND_DIR="+n.path("plugins-expand"),
		"RABBITMQ_NODENAME="+n.name,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		fmt.Sprintf("RABBITMQ_NODE_PORT=%d", n.port),
		fmt.Sprintf("RABBITMQ_DIST_PORT=%d", n.distPort),
		"ERL_EPMD_ADDRESS=127.0.0.1",
		// Keep the distribution listener on loopback too.
		"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}",
	)
}

// Start boots the node (on the same port and data as before, after a stop)
// and waits until it accepts AMQP connections. FreePort's ports were free a
// moment before; another test's process may take one before the node
// listens on it. So a first boot that fails on a port in use moves to new
// ports and boots again, unless the node's URL was handed out already; a
// restart keeps its ports (clients hold its URL).
func (n *RabbitNode) Start(t testing.TB) {
	t.Helper()
	for try := 1; ; try++ {
		err := n.boot(t)
		if err == nil {
			n.fixed = true
			return
		}
		if n.fixed || try == 3 || !bytes.Contains(n.console.Bytes(), []byte("eaddrinuse")) {
			t.Fatalf("rabbitmq node %s on port %d: %v\n%s", n.name, n.port, err, n.console.String())
		}
		t.Logf("rabbitmq node %s: port %d or %d taken meanwhile; booting on new ports", n.name, n.port, n.distPort)
		n.port, n.distPort = testenv.FreePort(t), testenv.FreePort(t)
		n.writeConfig(t)
	}
}

// boot starts rabbitmq-server and waits until it is ready; on failure the
// process is stopped and its console kept.
func (n *RabbitNode) boot(t testing.TB) error {
	t.Helper()
	n.console.Reset()
	cmd := exec.Command(n.bin)
	cmd.Dir, cmd.Env = n.dir, n.env()
	cmd.Stdout, cmd.Stderr = &n.console, &n.console
	testenv.OrphanGuard(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start rabbitmq-server: %v", err)
	}
	n.cmd, n.exited = cmd, make(chan struct{})
	go func(done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(n.exited)
	err := n.waitReady()
	if err != nil {
		n.Stop(t)
	}
	return err
}

// waitReady polls with an AMQP handshake: the port opens before the broker
// is fully booted.
func (n *RabbitNode) waitReady() error {
	deadline := time.Now().Add(rabbitBootTimeout)
	for {
		conn, err := amqp.DialConfig(n.url(), amqp.Config{Dial: amqp.DefaultDial(time.Second)})
		if err == nil {
			return conn.Close()
		}
		select {
		case <-n.exited:
			return fmt.Errorf("rabbitmq-server exited during boot: %v", n.cmd.ProcessState)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not accepting AMQP connections after %v: %v", rabbitBootTimeout, err)
		}
	}
}

// stop shuts the node down cleanly: SIGTERM makes the script stop the
// Erlang VM gracefully (it flushes the queues to disk). It kills the
// process if that takes too long. Stopping a stopped node does nothing.
func (n *RabbitNode) Stop(t testing.TB) {
	t.Helper()
	if n.cmd == nil {
		return
	}
	cmd := n.cmd
	n.cmd = nil
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-n.exited
		t.Errorf("rabbitmq node %s did not stop within 60s; killed", n.name)
	}
}
