package verify

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// relays are verify's `herald run` children: processes of this very
// binary, each on the generated config, whose output goes to a log file
// per child in verify's directory.
type relays struct {
	exe, config, dir string

	mu       sync.Mutex
	children []*child
	started  int
}

type child struct {
	n       int
	cmd     *exec.Cmd
	log     *os.File
	done    chan struct{}
	stopped bool // SIGSTOPped, not yet continued
}

func newRelays(config, dir string) (*relays, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("verify: find this binary: %w", err)
	}
	return &relays{exe: exe, config: config, dir: dir}, nil
}

// childEnv is the environment without HERALD_ variables: they would
// override the generated config's store and admin address (verify
// applied them already when it read the user's config).
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HERALD_") {
			env = append(env, kv)
		}
	}
	return env
}

// start starts one more child.
func (r *relays) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started++
	n := r.started
	log, err := os.Create(filepath.Join(r.dir, fmt.Sprintf("relay-%d.log", n)))
	if err != nil {
		return err
	}
	cmd := exec.Command(r.exe, "run", "--config", r.config)
	cmd.Env = append(childEnv(), fmt.Sprintf("HERALD_NODE=verify-%d", n))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("verify: start relay: %w", err)
	}
	c := &child{n: n, cmd: cmd, log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); log.Close(); close(c.done) }()
	r.children = append(r.children, c)
	return nil
}

// alive returns the children still running.
func (r *relays) alive() []*child {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*child
	for _, c := range r.children {
		select {
		case <-c.done:
		default:
			out = append(out, c)
		}
	}
	return out
}

// pick returns a running child that is not frozen, the oldest first, or
// nil.
func (r *relays) pick() *child {
	for _, c := range r.alive() {
		r.mu.Lock()
		stopped := c.stopped
		r.mu.Unlock()
		if !stopped {
			return c
		}
	}
	return nil
}

// kill SIGKILLs c and waits for it to end.
func (r *relays) kill(c *child) {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// freeze SIGSTOPs c; thaw SIGCONTs it.
func (r *relays) freeze(c *child) {
	r.mu.Lock()
	c.stopped = true
	r.mu.Unlock()
	_ = c.cmd.Process.Signal(syscall.SIGSTOP)
}

func (r *relays) thaw(c *child) {
	r.mu.Lock()
	c.stopped = false
	r.mu.Unlock()
	_ = c.cmd.Process.Signal(syscall.SIGCONT)
}

// keep tops the running children up to n (after kills), thawing any
// still frozen.
func (r *relays) keep(n int) error {
	alive := r.alive()
	for _, c := range alive {
		r.thaw(c)
	}
	for i := len(alive); i < n; i++ {
		if err := r.start(); err != nil {
			return err
		}
	}
	return nil
}

// stop ends every child: SIGTERM (a graceful shutdown releases its
// claims), SIGKILL after grace.
func (r *relays) stop(grace time.Duration) {
	alive := r.alive()
	for _, c := range alive {
		r.thaw(c)
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for _, c := range alive {
		select {
		case <-c.done:
		case <-time.After(time.Until(deadline)):
			r.kill(c)
		}
	}
}

// count is how many children were started in all.
func (r *relays) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started
}

// readyLine is what `herald run` prints once a lane is wired to its
// broker (run.go's announce), just before it relays.
const readyLine = "→ broker verify"

// waitReady waits until every running child has said it relays, so that
// the first events' latency is not the children's start-up; it gives up
// after within (the report's latency then includes the start).
func (r *relays) waitReady(within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		ready := 0
		alive := r.alive()
		for _, c := range alive {
			if b, err := os.ReadFile(c.log.Name()); err == nil && strings.Contains(string(b), readyLine) {
				ready++
			}
		}
		if ready == len(alive) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
