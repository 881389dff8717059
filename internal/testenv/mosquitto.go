package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// DefaultMQTTAddr is the machine's shared Mosquitto (never stopped by a
// test; a test that needs an outage starts its own with NewMosquitto).
const DefaultMQTTAddr = "127.0.0.1:1883"

// MQTTAddr returns HERALD_TEST_MQTT_ADDR or the default.
func MQTTAddr() string { return env("HERALD_TEST_MQTT_ADDR", DefaultMQTTAddr) }

// RequireMQTT checks the shared MQTT server and returns its tcp:// URL.
func RequireMQTT(t testing.TB) string {
	t.Helper()
	RequireTCP(t, "mosquitto at "+MQTTAddr(), MQTTAddr())
	return "tcp://" + MQTTAddr()
}

// Mosquitto is a mosquitto of a test's own, on its own port and data
// directory with persistence on, so that a stop and start keeps its
// persistent sessions and their queued messages; stopped when the test
// ends.
type Mosquitto struct {
	// Addr is host:port.
	Addr string
	bin  string
	dir  string
	cmd  *exec.Cmd
}

// StartMosquitto starts a private mosquitto, or skips the test (fails it
// under CI=true) when mosquitto is not installed.
func StartMosquitto(t testing.TB) *Mosquitto {
	t.Helper()
	m := NewMosquitto(t)
	m.Start(t)
	return m
}

// NewMosquitto picks a free port and data directory for a private
// mosquitto and writes its config, without starting it (Start does).
func NewMosquitto(t testing.TB) *Mosquitto {
	t.Helper()
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/mosquitto"); serr != nil {
			Unavailable(t, "mosquitto is not installed", err)
		}
		bin = "/usr/sbin/mosquitto"
	}
	m := &Mosquitto{Addr: fmt.Sprintf("127.0.0.1:%d", FreePort(t)), bin: bin, dir: t.TempDir()}
	_, port, _ := net.SplitHostPort(m.Addr)
	// No queue limit: a test's sessions must not lose messages to
	// mosquitto's default max_queued_messages (1000). "user root" keeps
	// a server started by root on the test's directory (it has no effect
	// for other users).
	conf := fmt.Sprintf("user root\nlistener %s 127.0.0.1\nallow_anonymous true\npersistence true\npersistence_location %s/\n"+
		"autosave_interval 1\nmax_queued_messages 0\nlog_dest file %s\n", port, m.dir, filepath.Join(m.dir, "mosquitto.log"))
	if err := os.WriteFile(filepath.Join(m.dir, "mosquitto.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop(t) })
	return m
}

// URL is the server's tcp:// URL.
func (m *Mosquitto) URL() string { return "tcp://" + m.Addr }

// Start starts the server (again) on its port and data directory and
// waits until it accepts connections.
func (m *Mosquitto) Start(t testing.TB) {
	t.Helper()
	m.cmd = exec.Command(m.bin, "-c", filepath.Join(m.dir, "mosquitto.conf"))
	OrphanGuard(m.cmd)
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start mosquitto: %v", err)
	}
	WaitFor(t, 20*time.Second, 20*time.Millisecond, "mosquitto on "+m.Addr+" accepting connections", func() bool {
		c, err := net.DialTimeout("tcp", m.Addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// Stop stops the server (SIGTERM: it saves its persistent sessions and
// exits) and waits for it.
func (m *Mosquitto) Stop(t testing.TB) {
	t.Helper()
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(os.Interrupt)
	_ = m.cmd.Wait()
	m.cmd = nil
}
