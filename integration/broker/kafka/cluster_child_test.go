package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	. "github.com/heraldhq/herald/broker/kafka"
	"github.com/heraldhq/herald/internal/clustertest"
	"github.com/heraldhq/herald/projector/projectortest"
)

// memberEnv carries a group member's job: the test binary re-executes
// itself (TestMain) and runs one projector on the consumer group instead
// of the tests, so that the test can SIGKILL a real process of the group.
const memberEnv = "HERALD_KAFKA_GROUP_MEMBER"

// memberJob is what a member process needs: the brokers, the group, and
// the read model's SQLite file and tables.
type memberJob struct {
	Brokers []string `json:"brokers"`
	Group   string   `json:"group"`
	Topic   string   `json:"topic"`
	Path    string   `json:"path"`
	Table   string   `json:"table"`
	Model   string   `json:"model"`
}

// runMember projects the group's records into the model until SIGTERM,
// then exits 0; any failure exits non-zero with the reason on stderr.
func runMember(arg string) {
	var job memberJob
	if err := json.Unmarshal([]byte(arg), &job); err != nil {
		fmt.Fprintln(os.Stderr, "bad member job:", err)
		os.Exit(99)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	s, err := projectortest.OpenBackend(ctx, "sqlite", job.Path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(98)
	}
	tb := &exitTB{}
	p := clustertest.ProjectorOn(tb, s, job.Table, projectortest.ModelOn(s, job.Model), os.Stderr)
	sub, err := NewSubscriber(ctx, SubscriberConfig{Brokers: job.Brokers, Group: job.Group, Topics: []string{job.Topic},
		// A member that dies is noticed after the session timeout: short,
		// so that the rebalance comes within the test.
		// The client's own log (info: assignments, offsets fetched,
		// errors) goes to the test's report if the test fails.
		Opts: []kgo.Opt{kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond),
			kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, nil))}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(98)
	}
	err = p.Run(ctx, sub)
	_ = sub.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "projector:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// exitTB is the testing.TB of a member process: a fatal error ends the
// process with the message on stderr.
type exitTB struct{ testing.TB }

func (exitTB) Helper()                   {}
func (exitTB) Cleanup(func())            {}
func (exitTB) Fatal(args ...any)         { fmt.Fprintln(os.Stderr, args...); os.Exit(98) }
func (exitTB) Fatalf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...); os.Exit(98) }

// member is a group member process started by the test.
type member struct {
	cmd    *exec.Cmd
	out    *lockedBuffer
	exited chan struct{} // closed when the process is gone; err is then set
	err    error
}

// startMember starts a member process on job.
func startMember(t *testing.T, job memberJob) *member {
	t.Helper()
	enc, _ := json.Marshal(job)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memberEnv+"="+string(enc))
	m := &member{cmd: cmd, out: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = m.out, m.out
	// The kernel kills the member if the test binary dies without its
	// cleanups, so no orphan keeps consuming.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.err = cmd.Wait(); close(m.exited) }()
	t.Cleanup(m.kill)
	return m
}

// kill sends SIGKILL and waits for the process to be gone.
func (m *member) kill() {
	select {
	case <-m.exited:
		return
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
}

// terminate sends SIGTERM and checks for a clean exit.
func (m *member) terminate(t *testing.T) {
	t.Helper()
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
		if m.err != nil {
			t.Errorf("member did not exit cleanly on SIGTERM: %v\n%s", m.err, m.out.String())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("member did not stop within 30s of SIGTERM\n%s", m.out.String())
	}
}

// lockedBuffer collects a child's output from two pipes.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
