package projectortest

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
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/projector"
)

// CrashConfig describes a broker.Subscriber for RunKilledBeforeAck.
type CrashConfig struct {
	// Env is the environment variable that carries a crash child's job:
	// the test package's TestMain calls CrashChild when it is set.
	Env string
	// Source describes the subscription to the child (an endpoint, a
	// queue); it is JSON-encoded into the job and handed to CrashChild's
	// subscribe.
	Source any
	// Publish sends events to the subscription.
	Publish func(tb testing.TB, evs []herald.Event)
	// Subscribe opens a subscriber on the subscription in the test's own
	// process (the consumer the broker redelivers to), given the
	// projection's store (for subscribers that keep positions there).
	Subscribe func(tb testing.TB, s Store) broker.Subscriber
	// Within bounds the redelivery (a visibility timeout, a lease).
	// Defaults to 60s.
	Within time.Duration
}

// crashJob is a crash child's job.
type crashJob struct {
	Source json.RawMessage `json:"source"`
	Path   string          `json:"path"` // SQLite file
	Table  string          `json:"table"`
	Model  string          `json:"model"`
}

// RunKilledBeforeAck publishes one event; a child process (the test
// binary again, with cfg.Env set) projects it with a subscriber whose ack
// kills the process with SIGKILL, that is after the ledger commit and
// before the broker hears of it. The broker must then hand the event to a
// new subscriber, which applies it zero more times and acks it.
func RunKilledBeforeAck(t *testing.T, cfg CrashConfig) {
	t.Helper()
	if cfg.Within <= 0 {
		cfg.Within = 60 * time.Second
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	s := SQLite(path)(t)
	model := NewModel(t, s)
	table := Name("herald_pe")
	if err := s.MigrateProjections(context.Background(), table); err != nil {
		t.Fatal(err)
	}
	cfg.Publish(t, []herald.Event{Event("crash", 1)})

	source, err := json.Marshal(cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	job, _ := json.Marshal(crashJob{Source: source, Path: path, Table: table, Model: model.Table})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), cfg.Env+"="+string(job))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
	}
	if n := model.Count(t, s.DB(), "crash"); n != 1 {
		t.Fatalf("[commit before ack] child committed %d, want 1", n)
	}

	var calls, acks atomic.Int32
	p, err := projector.New(projector.Config{Name: "count", Store: s, Table: table, Logger: slog.New(slog.DiscardHandler),
		Handler: func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
			calls.Add(1)
			return model.Bump(ctx, tx, ev)
		}})
	if err != nil {
		t.Fatal(err)
	}
	sub := cfg.Subscribe(t, s)
	t.Cleanup(func() { _ = sub.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, CountAcks{Subscriber: sub, N: &acks}) }()
	Eventually(t, cfg.Within, "[redelivered] the event handed to a new subscriber and acked", func() bool {
		return acks.Load() >= 1
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := model.Count(t, s.DB(), "crash"); n != 1 || calls.Load() != 0 {
		t.Errorf("[applied once] counted %d with %d handler calls after the redelivery, want 1 and 0", n, calls.Load())
	}
}

// CrashChild runs the crash child's job (the value of CrashConfig.Env)
// and never returns: subscribe opens the subscriber the job's Source
// describes, given the child's projection store.
func CrashChild(job string, subscribe func(source json.RawMessage, s Store) (broker.Subscriber, error)) {
	var j crashJob
	if err := json.Unmarshal([]byte(job), &j); err != nil {
		fmt.Fprintln(os.Stderr, "bad crash job:", err)
		os.Exit(99)
	}
	p, s := childProjector("sqlite", j.Path, j.Table, j.Model)
	sub, err := subscribe(j.Source, s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(98)
	}
	_ = p.Run(context.Background(), KillOnAck{Subscriber: sub})
	os.Exit(97) // not reached: the ack kills the process
}

// KillOnAck is a subscriber whose acks kill the process with SIGKILL:
// after the ledger commit, before the broker hears of it.
type KillOnAck struct{ broker.Subscriber }

// Receive implements broker.Subscriber.
func (k KillOnAck) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	got, err := k.Subscriber.Receive(ctx, most)
	for i := range got {
		got[i].Ack = func(context.Context) error {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal arrives; never return
		}
	}
	return got, err
}

// CountAcks is a subscriber that counts in N the acks that succeeded.
type CountAcks struct {
	broker.Subscriber
	N *atomic.Int32
}

// Receive implements broker.Subscriber.
func (c CountAcks) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	got, err := c.Subscriber.Receive(ctx, most)
	for i := range got {
		ack := got[i].Ack
		got[i].Ack = func(ctx context.Context) error {
			err := ack(ctx)
			if err == nil {
				c.N.Add(1)
			}
			return err
		}
	}
	return got, err
}
