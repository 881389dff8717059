package projector_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/projector/projectortest"
)

// childEnv carries a crash child's job: the test binary re-executes itself
// and runs one projector that SIGKILLs its own process in the ack, that
// is after the commit and before the broker hears of it.
const childEnv = "HERALD_PROJECTOR_CRASH_CHILD"

type childJob struct {
	Backend string       `json:"backend"`
	Path    string       `json:"path"` // SQLite file
	Table   string       `json:"table"`
	Model   string       `json:"model"`
	Event   herald.Event `json:"event"`
}

func runChild(arg string) {
	var job childJob
	if err := json.Unmarshal([]byte(arg), &job); err != nil {
		fmt.Fprintln(os.Stderr, "bad child job:", err)
		os.Exit(99)
	}
	p := projectortest.ChildProjector(job.Backend, job.Path, job.Table, job.Model)
	src := &killSource{ev: job.Event}
	_ = p.Run(context.Background(), src)
	os.Exit(97) // not reached: the ack kills the process
}

// killSource delivers one event and kills the process when it is acked.
type killSource struct {
	ev   herald.Event
	sent bool
}

func (k *killSource) Receive(ctx context.Context, _ int) ([]broker.Received, error) {
	if k.sent {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	k.sent = true
	return []broker.Received{{Event: k.ev,
		Ack: func(context.Context) error {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal arrives; never return
		},
		Nack: func(context.Context) error { return nil }}}, nil
}

func (k *killSource) Close() error { return nil }

// TestKilledAfterCommitBeforeAck kills a consumer process with SIGKILL
// after its commit and before its ack; the broker redelivers the event and
// it is applied zero more times.
func TestKilledAfterCommitBeforeAck(t *testing.T) {
	forEachBackend(t, func(t *testing.T, f *fixture) {
		ev := projectortest.Event("crash", 1)
		var path string
		if f.s.Dialect().Name == "sqlite" {
			if err := f.s.DB().QueryRow("SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&path); err != nil {
				t.Fatal(err)
			}
		}
		job, _ := json.Marshal(childJob{Backend: f.s.Dialect().String(), Path: path, Table: f.table, Model: f.model.Table, Event: ev})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+string(job))
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
		}
		if n := f.model.Count(t, f.s.DB(), "crash"); n != 1 {
			t.Fatalf("[commit before ack] child committed %d, want 1", n)
		}
		// The redelivery, to a new consumer.
		var calls atomic.Int32
		p, err := projector.New(f.config(func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
			calls.Add(1)
			return f.model.Bump(ctx, tx, ev)
		}))
		if err != nil {
			t.Fatal(err)
		}
		src := newSliceSource(ev)
		stop := run(t, p, src)
		src.WaitAcks(t, 1)
		stop()
		if n := f.model.Count(t, f.s.DB(), "crash"); n != 1 || calls.Load() != 0 {
			t.Errorf("[redelivery after crash] counted %d with %d handler calls, want 1 and 0", n, calls.Load())
		}
	})
}
