package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoVerifies runs `herald demo --gifts 2000 --exit` as a child
// process in an empty directory, with and without injected broker
// failures: it must exit 0 with the verified line.
func TestDemoVerifies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole demo twice")
	}
	run := func(t *testing.T, dir string, args ...string) (int, string) {
		t.Helper()
		c := startChild(t, dir, args...)
		select {
		case <-c.done:
			c.done <- nil
		case <-time.After(3 * time.Minute):
			t.Fatalf("herald %v did not finish within 3 minutes:\n%s", args, c.stderr.String())
		}
		return c.cmd.ProcessState.ExitCode(), c.stderr.String()
	}
	if raceEnabled {
		run = plainHerald(t)
	}
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"clean", nil},
		{"fail-rate 0.2", []string{"--fail-rate", "0.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"demo", "--gifts", "2000", "--exit", "--rate", "20000", "--launch-delay", "500ms"}, tc.extra...)
			code, out := run(t, dir, args...)
			if code != ExitOK || !strings.Contains(out, "verified: 2000 gifts, gift wall matches ledger\n") {
				t.Fatalf("herald %v: exit %d, want 0 and the verified line:\n%s", args, code, out)
			}
			if !strings.Contains(out, "embedded NATS JetStream at nats://127.0.0.1:") {
				t.Fatalf("the demo does not say where NATS listens:\n%s", out)
			}
			if retries := lastField(out, "retries="); len(tc.extra) > 0 && (retries == "0" || retries == "") {
				t.Fatalf("retries=%s in the last status line; want some when publishes fail:\n%s", retries, out)
			}
		})
	}
}

// plainHerald builds herald without the race detector (in the test's
// build mode the demo would take minutes) and returns a runner of it.
func plainHerald(t *testing.T) func(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "herald")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/heraldhq/herald/cmd/herald").CombinedOutput(); err != nil {
		t.Fatalf("go build herald: %v\n%s", err, out)
	}
	return func(t *testing.T, dir string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.WaitDelay = time.Second
		done := make(chan struct{})
		timer := time.AfterFunc(3*time.Minute, func() { cmd.Process.Kill(); close(done) })
		out, _ := cmd.CombinedOutput()
		if !timer.Stop() {
			<-done
			t.Fatalf("herald %v did not finish within 3 minutes:\n%s", args, out)
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
}

// lastField returns the value of name (e.g. "retries=") in the last plain
// status line of out.
func lastField(out, name string) string {
	var last string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "t=") {
			last = l
		}
	}
	for _, f := range strings.Fields(last) {
		if v, ok := strings.CutPrefix(f, name); ok {
			return v
		}
	}
	return ""
}

func TestDemoUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--exit"},
		{"demo", "--fail-rate", "1.5"},
		{"demo", "--gifts", "-1"},
	} {
		if code, _, stderr := cliRun(t, args...); code != ExitUsage {
			t.Errorf("herald %v: exit %d (%s), want %d", args, code, stderr, ExitUsage)
		}
	}
}
