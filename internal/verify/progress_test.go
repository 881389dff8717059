package verify

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestProgressLine: the bar follows the window while producing, then the
// events read back while draining, with the figures and the fault under
// way.
func TestProgressLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    progressState
		want []string
	}{
		{"start", progressState{Window: 20 * time.Second, Events: 2000, Faults: 4, Relays: 3},
			[]string{"[....................]   0%", "0s of 20s", "written 0/2000", "faults 0/4, relays 3"}},
		{"half, a cut under way", progressState{Elapsed: 10 * time.Second, Window: 20 * time.Second, Written: 1000, Events: 2000,
			Committed: 860, ReadBack: 850, FaultsDone: 1, Faults: 4, Fault: "cut-db", Relays: 3},
			[]string{"[##########..........]  50%", "10s of 20s", "committed 860, read back 850", "faults 1/4, now cut-db"}},
		{"draining", progressState{Elapsed: 23 * time.Second, Window: 20 * time.Second, Written: 2000, Events: 2000,
			Committed: 1000, ReadBack: 750, FaultsDone: 4, Faults: 4, Relays: 3},
			[]string{"[###############.....]  75%", "draining, 3s", "read back 750", "faults 4/4, relays"}},
		{"past the end", progressState{Elapsed: 30 * time.Second, Window: 20 * time.Second, Committed: 10, ReadBack: 12},
			[]string{"[####################] 100%"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := progressLine(tc.s)
			if strings.ContainsAny(line, "\r\n") {
				t.Fatalf("%q: not one line", line)
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Fatalf("%q: want %q in it", line, w)
				}
			}
		})
	}
}

// TestProgressOutput: in a log (not a terminal) a full line per tick; on
// a terminal one line redrawn in place, ended by a newline at stop.
func TestProgressOutput(t *testing.T) {
	state := func() progressState { return progressState{Window: time.Second, Events: 10, Relays: 1} }
	for _, tty := range []bool{false, true} {
		// A file, which the test reads while showProgress writes.
		out, err := os.CreateTemp(t.TempDir(), "progress")
		if err != nil {
			t.Fatal(err)
		}
		read := func() string { b, _ := os.ReadFile(out.Name()); return string(b) }
		stop := showProgress(out, tty, 5*time.Millisecond, state)
		deadline := time.Now().Add(5 * time.Second)
		for strings.Count(read(), "herald verify [") < 3 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		stop()
		out.Close()
		got := read()
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		switch {
		case strings.Count(got, "herald verify [") < 3:
			t.Fatalf("tty %v: fewer than 3 updates in 5s: %q", tty, got)
		case !tty && (strings.Contains(got, "\r") || len(lines) < 3):
			t.Fatalf("log output: want a line per update, no carriage returns: %q", got)
		case tty && (len(lines) != 1 || !strings.HasPrefix(got, "\rherald verify [") || !strings.Contains(got, "\x1b[K")):
			t.Fatalf("terminal output: want one line redrawn in place: %q", got)
		}
		if !strings.HasSuffix(got, "\n") {
			t.Fatalf("tty %v: the output does not end with a newline: %q", tty, got)
		}
	}
}
