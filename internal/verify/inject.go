package verify

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/faultproxy"
)

// injected is one fault as it happened, for the report.
type injected struct {
	Fault  string        `json:"fault"`
	At     time.Duration `json:"at_ns"`
	Lasted time.Duration `json:"lasted_ns"`
	Detail string        `json:"detail,omitempty"`
}

// injector applies the faults, spread evenly over the production window.
type injector struct {
	v       *verification
	began   time.Time
	mu      sync.Mutex
	done    []injected
	current string
	// frozen counts relays SIGSTOPped and not yet thawed.
	frozen int
	wg     sync.WaitGroup
}

// hold is how long a cut, delay or blackhole lasts: long enough for the
// relays to notice and retry, short enough to fit several in the window.
func (in *injector) hold() time.Duration {
	d := in.v.o.Duration / time.Duration(2*(len(in.v.faults)+1))
	return min(max(d, 500*time.Millisecond), 3*time.Second)
}

// run injects each fault at its time, until the window ends or ctx does.
func (in *injector) run(ctx context.Context) {
	n := len(in.v.faults)
	for i, f := range in.v.faults {
		at := in.v.o.Duration * time.Duration(i+1) / time.Duration(n+1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(in.began.Add(at))):
		}
		in.apply(ctx, f)
	}
}

// apply injects f and undoes it (a freeze is undone in the background,
// after the lease, so that the next fault is not held up).
func (in *injector) apply(ctx context.Context, f string) {
	start := time.Now()
	in.setCurrent(f)
	defer in.setCurrent("")
	detail := ""
	switch f {
	case faultKill:
		detail = in.kill()
	case faultStop:
		detail = in.freeze()
		return
	case faultCutBroker, faultBlackholeBroker, faultDelayBroker:
		detail = in.network(ctx, in.v.brokerProxies, f)
	case faultCutDB, faultBlackholeDB, faultDelayDB:
		detail = in.network(ctx, in.dbProxies(), f)
	case faultRestartBroker:
		detail = restart(ctx, in.v.o.RestartBrokerCmd)
	case faultRestartDB:
		detail = restart(ctx, in.v.o.RestartDBCmd)
	}
	in.record(injected{Fault: f, At: start.Sub(in.began), Lasted: time.Since(start), Detail: detail})
}

func (in *injector) kill() string {
	r := in.v.relays
	c := r.pick()
	if c == nil {
		return "no relay running"
	}
	r.kill(c)
	if err := r.start(); err != nil {
		return fmt.Sprintf("SIGKILL relay %d; restart failed: %v", c.n, err)
	}
	return fmt.Sprintf("SIGKILL relay %d, started relay %d", c.n, r.count())
}

// freeze SIGSTOPs a relay for its lease and a second more: its claims
// expire while it holds them, and other relays take them over.
func (in *injector) freeze() string {
	r := in.v.relays
	c := r.pick()
	start := time.Now()
	if c == nil {
		in.record(injected{Fault: faultStop, At: start.Sub(in.began), Detail: "no relay running"})
		return ""
	}
	r.freeze(c)
	in.setFrozen(1)
	hold := in.v.scratch.Lease + time.Second
	in.wg.Add(1)
	go func() {
		defer in.wg.Done()
		time.Sleep(hold)
		r.thaw(c)
		in.setFrozen(-1)
		in.record(injected{Fault: faultStop, At: start.Sub(in.began), Lasted: time.Since(start),
			Detail: fmt.Sprintf("SIGSTOP relay %d past its lease (%v), then SIGCONT", c.n, in.v.scratch.Lease)})
	}()
	return ""
}

// network cuts, blackholes or delays every proxy of ps (a Kafka
// cluster's brokers all at once) for hold.
func (in *injector) network(ctx context.Context, ps []*faultproxy.Proxy, f string) string {
	if len(ps) == 0 {
		return "no proxy"
	}
	hold := in.hold()
	mode := map[string]faultproxy.Mode{faultCutBroker: faultproxy.Cut, faultCutDB: faultproxy.Cut,
		faultBlackholeBroker: faultproxy.Blackhole, faultBlackholeDB: faultproxy.Blackhole}
	var targets []string
	for _, p := range ps {
		targets = append(targets, p.Target())
		if m, ok := mode[f]; ok {
			if err := p.Set(m); err != nil {
				return err.Error()
			}
			defer func() { _ = p.Set(faultproxy.Pass) }()
		} else {
			p.SetDelay(200 * time.Millisecond)
			defer p.SetDelay(0)
		}
	}
	select {
	case <-ctx.Done():
	case <-time.After(hold):
	}
	return fmt.Sprintf("%s for %v", strings.Join(targets, ","), hold.Round(time.Millisecond))
}

// dbProxies is the database proxy as a list (none for a file database).
func (in *injector) dbProxies() []*faultproxy.Proxy {
	if in.v.dbProxy == nil {
		return nil
	}
	return []*faultproxy.Proxy{in.v.dbProxy}
}

func (in *injector) record(r injected) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.done = append(in.done, r)
}

func (in *injector) setCurrent(f string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.current = f
}

// status counts the faults done and names the one under way, for the
// progress line.
func (in *injector) status() (done int, current string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	current = in.current
	if in.frozen > 0 {
		current = strings.TrimPrefix(current+", "+faultStop, ", ")
	}
	return len(in.done), current
}

// setFrozen counts a relay frozen (+1) or thawed (-1).
func (in *injector) setFrozen(d int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.frozen += d
}

// wait waits for frozen relays to be thawed and returns what happened.
func (in *injector) wait() []injected {
	in.wg.Wait()
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.done
}

// restartTimeout bounds a restart command.
const restartTimeout = 2 * time.Minute

// restart runs the user's restart command with sh -c and says how it went.
func restart(ctx context.Context, command string) string {
	ctx, cancel := context.WithTimeout(ctx, restartTimeout)
	defer cancel()
	began := time.Now()
	out, err := exec.CommandContext(ctx, "sh", "-c", command).CombinedOutput()
	if err != nil {
		tail := strings.TrimSpace(string(out))
		if i := strings.LastIndexByte(tail, '\n'); i >= 0 {
			tail = tail[i+1:]
		}
		return fmt.Sprintf("%q failed after %v: %v %s", command, time.Since(began).Round(time.Millisecond), err, tail)
	}
	return fmt.Sprintf("%q ran in %v", command, time.Since(began).Round(time.Millisecond))
}
