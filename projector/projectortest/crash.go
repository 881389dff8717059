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
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector"
)

// crashChildEnv carries a crash child's job: the test binary re-executes
// itself and runs one projector whose acks SIGKILL its own process, that
// is after the ledger commit and before the broker hears of it.
const crashChildEnv = "HERALD_PROJECTORTEST_CRASH_CHILD"

// crashJob is the child's job: the SQLite ledger and model, and the
// adapter's own description of its subscriber.
type crashJob struct {
	Path       string          `json:"path"`
	Table      string          `json:"table"`
	Model      string          `json:"model"`
	Subscriber json.RawMessage `json:"subscriber"`
}

// IsCrashChild reports whether this process is a crash child
// (RunKilledBeforeAck started it), for set-up a child needs first.
func IsCrashChild() bool { return os.Getenv(crashChildEnv) != "" }

// CrashChild runs a crash child's job and exits when the process is one
// (RunKilledBeforeAck started it); otherwise it returns at once. Call it
// first in TestMain, with the adapter's way to open the subscriber its
// test described (KilledConfig.Child), given the child's projection store
// (for subscribers that keep their positions there).
func CrashChild(open func(desc json.RawMessage, s Store) (broker.Subscriber, error)) {
	arg := os.Getenv(crashChildEnv)
	if arg == "" {
		return
	}
	var job crashJob
	if err := json.Unmarshal([]byte(arg), &job); err != nil {
		fmt.Fprintln(os.Stderr, "bad child job:", err)
		os.Exit(99)
	}
	p, s := childProjector("sqlite", job.Path, job.Table, job.Model)
	sub, err := open(job.Subscriber, s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(98)
	}
	_ = p.Run(context.Background(), KillOnAck{sub})
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

// CountAcks counts in N the acks that succeeded of the messages a
// subscriber hands out.
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

// KilledConfig describes a subscriber for RunKilledBeforeAck.
type KilledConfig struct {
	// Publish sends evs to the subscription (which exists by then).
	Publish func(tb testing.TB, evs []herald.Event)
	// Child is what the child's CrashChild open function receives.
	Child any
	// Subscribe opens the subscriber that takes over after the kill (the
	// same session or group as the child's), given the projection store.
	Subscribe func(tb testing.TB, s Store) broker.Subscriber
	// AfterKill, if set, runs once the child is dead, before the new
	// subscriber opens (a check of the broker, a wait for it to notice).
	AfterKill func(t *testing.T)
	// Within bounds the redelivery. Defaults to 30s.
	Within time.Duration
}

// RunKilledBeforeAck checks exactly once across a crash between the
// ledger commit and the ack: a projector process (the test binary run
// again, see CrashChild) applies one event and is killed with SIGKILL in
// its ack; the broker hands the event to a new subscriber, the projector
// applies it zero more times (the ledger has it) and acks it.
func RunKilledBeforeAck(t *testing.T, cfg KilledConfig) {
	if cfg.Within <= 0 {
		cfg.Within = 30 * time.Second
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	s := SQLite(path)(t)
	model := NewModel(t, s)
	table := Name("herald_pe")
	if err := s.MigrateProjections(context.Background(), table); err != nil {
		t.Fatal(err)
	}
	cfg.Publish(t, []herald.Event{Event("crash", 1)})
	desc, err := json.Marshal(cfg.Child)
	if err != nil {
		t.Fatal(err)
	}
	job, _ := json.Marshal(crashJob{Path: path, Table: table, Model: model.Table, Subscriber: desc})
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
	if cfg.AfterKill != nil {
		cfg.AfterKill(t)
	}
	redeliver(t, s, model, table, cfg)
}

// redeliver runs a projector on a new subscriber until it acks the
// event again, and checks the handler never ran.
func redeliver(t *testing.T, s Store, model *Model, table string, cfg KilledConfig) {
	t.Helper()
	var calls, acks atomic.Int32
	p, err := projector.New(projector.Config{Settings: projector.Settings{Name: "count", Table: table}, Store: s, Logger: slog.New(slog.DiscardHandler),
		Handler: func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
			calls.Add(1)
			return model.Bump(ctx, tx, ev)
		}})
	if err != nil {
		t.Fatal(err)
	}
	sub := cfg.Subscribe(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, CountAcks{sub, &acks}) }()
	testenv.WaitFor(t, cfg.Within, 20*time.Millisecond, "the event redelivered to a new subscriber and acked", func() bool {
		return acks.Load() >= 1
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if n := model.Count(t, s.DB(), "crash"); n != 1 || calls.Load() != 0 {
		t.Errorf("[redelivery after crash] counted %d with %d handler calls, want 1 and 0", n, calls.Load())
	}
}
