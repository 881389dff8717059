package rocketmq

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/projector/projectortest"
)

// crashChildEnv carries a crash child's job: the test binary re-executes
// itself and runs one projector on a RocketMQ subscriber that SIGKILLs its
// own process in the ack, that is after the ledger commit and before the
// subscriber hears of it.
const crashChildEnv = "HERALD_ROCKETMQ_CRASH_CHILD"

type crashJob struct {
	NameServer string `json:"name_server"`
	Group      string `json:"group"`
	Topic      string `json:"topic"`
	Path       string `json:"path"` // SQLite file
	Table      string `json:"table"`
	Model      string `json:"model"`
}

// runCrashChild runs the job in arg; it never returns.
func runCrashChild(arg string) {
	var job crashJob
	if err := json.Unmarshal([]byte(arg), &job); err != nil {
		fmt.Fprintln(os.Stderr, "bad child job:", err)
		os.Exit(99)
	}
	ctx := context.Background()
	p := projectortest.ChildProjector("sqlite", job.Path, job.Table, job.Model)
	sub, err := NewSubscriber(ctx, SubscriberConfig{NameServers: []string{job.NameServer}, Group: job.Group, Topic: job.Topic})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(98)
	}
	_ = p.Run(ctx, projectortest.KillOnAck{Subscriber: sub})
	os.Exit(97) // not reached: the ack kills the process
}

// TestSubscriberKilledAfterCommitBeforeAck: a projector process on a
// RocketMQ subscriber is killed with SIGKILL after its ledger commit and
// before its ack; no consumer offset was committed, the group hands the
// message to a new subscriber, it is applied zero more times, and that
// subscriber's ack commits the offset past it.
func TestSubscriberKilledAfterCommitBeforeAck(t *testing.T) {
	const topic = "crash"
	c, err := rmqfake.New(rmqfake.Options{MaxLongPoll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	path := filepath.Join(t.TempDir(), "crash.db")
	s := projectortest.SQLite(path)(t)
	model := projectortest.NewModel(t, s)
	table := projectortest.Name("herald_pe")
	if err := s.MigrateProjections(context.Background(), table); err != nil {
		t.Fatal(err)
	}
	group := projectortest.Name("g")
	publishEvents(t, newFakePublisher(t, c, Config{}), topic, []herald.Event{projectortest.Event("crash", 1)})

	job, _ := json.Marshal(crashJob{NameServer: c.NameServer(), Group: group, Topic: topic, Path: path, Table: table, Model: model.Table})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+string(job))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
	}
	if n := model.Count(t, s.DB(), "crash"); n != 1 {
		t.Fatalf("[commit before ack] child committed %d, want 1", n)
	}
	if sum := committed(c, group, topic); sum != 0 {
		t.Fatalf("[no offset before ack] the killed child committed offsets summing to %d, want 0", sum)
	}
	// The broker drops the killed consumer when its connection closes;
	// until then a new member would leave it the message's queue.
	testenv.WaitFor(t, 5*time.Second, 5*time.Millisecond, "the killed consumer gone from the group", func() bool {
		return len(c.Consumers(group)) == 0
	})

	var calls, acks atomic.Int32
	p, err := projector.New(projector.Config{Name: "count", Store: s, Table: table, Logger: slog.New(slog.DiscardHandler),
		Handler: func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
			calls.Add(1)
			return model.Bump(ctx, tx, ev)
		}})
	if err != nil {
		t.Fatal(err)
	}
	sub := newFakeSubscriber(t, c, SubscriberConfig{Group: group, Topic: topic})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, projectortest.CountAcks{Subscriber: sub, N: &acks}) }()
	testenv.WaitFor(t, 30*time.Second, 20*time.Millisecond, "the message redelivered to a new subscriber and acked", func() bool {
		return acks.Load() >= 1
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := sub.Close(); err != nil { // persists the acked offset
		t.Fatal(err)
	}
	if n := model.Count(t, s.DB(), "crash"); n != 1 || calls.Load() != 0 {
		t.Errorf("[redelivery after crash] counted %d with %d handler calls, want 1 and 0", n, calls.Load())
	}
	// Close persists the offsets by one-way requests.
	testenv.WaitFor(t, 5*time.Second, 20*time.Millisecond, "[ack commits] the offset past the message committed", func() bool {
		return committed(c, group, topic) == 1
	})
}

// committed sums the group's committed offsets over topic's queues.
func committed(c *rmqfake.Cluster, group, topic string) int64 {
	var sum int64
	for q := range 4 {
		if off, ok := c.CommittedOffset(group, topic, q); ok {
			sum += off
		}
	}
	return sum
}
