package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

// Rule: `herald lane pause` in one process stops a `herald run` in another
// within its poll interval; status shows the pause; `herald lane resume`
// lets the backlog go.
func TestLanePauseObeyedByRunningRelay(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "    poll_interval: 50ms\n")
	if code, _, e := cliRun(t, "migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: %s", e)
	}
	s := openStore(t, dir)
	run := startChild(t, dir, "run", "--config", cfg)
	enqueueMany(t, s, "main_outbox", 10)
	waitFor(t, 30*time.Second, "the relay delivering", func() bool { return mainStats(t, s).Delivered == 10 })

	if code, out, e := cliRun(t, "lane", "pause", "main", "--config", cfg); code != 0 || !strings.Contains(out, "lane main paused") {
		t.Fatalf("lane pause: exit %d: %s %s", code, out, e)
	}
	waitFor(t, 10*time.Second, "the relay to log the pause", func() bool { return strings.Contains(run.stderr.String(), "lane paused") })
	enqueueMany(t, s, "main_outbox", 10)
	time.Sleep(time.Second) // twenty poll intervals: a relay ignoring the pause would deliver within one
	if st := mainStats(t, s); st.Delivered != 10 || st.InFlight != 0 {
		t.Fatalf("a paused lane relayed: %+v", st)
	}
	code, out, e := cliRun(t, "status", "--config", cfg, "--json")
	var st struct {
		Lanes []struct {
			Paused   bool       `json:"paused"`
			PausedAt *time.Time `json:"paused_at"`
		} `json:"lanes"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Lanes) != 1 || !st.Lanes[0].Paused || st.Lanes[0].PausedAt == nil {
		t.Fatalf("status --json of a paused lane: exit %d: %s %s", code, out, e)
	}
	if code, out, _ := cliRun(t, "status", "--config", cfg); code != 0 || !strings.Contains(out, "paused") {
		t.Fatalf("status of a paused lane does not say so:\n%s", out)
	}

	if code, _, e := cliRun(t, "lane", "resume", "main", "--config", cfg); code != 0 {
		t.Fatalf("lane resume: %s", e)
	}
	waitFor(t, 30*time.Second, "the backlog delivered after resume", func() bool { return mainStats(t, s).Delivered == 20 })
	run.terminate(t)
}

// Rule: pausing a lane that is not configured is an error naming it.
func TestLanePauseUnknownLane(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "")
	code, _, e := cliRun(t, "lane", "pause", "nope", "--config", cfg)
	if code != ExitUsage || !strings.Contains(e, `no lane "nope"`) {
		t.Fatalf("exit %d, stderr %q", code, e)
	}
}

// mainStats counts the rows of writeConfig's lane table.
func mainStats(t *testing.T, s store.Store) store.LaneStats {
	t.Helper()
	st, err := s.Stats(context.Background(), store.Scope{Table: "main_outbox"})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Rule: `herald lane reset` names what is wrong with its arguments (exit
// 2): an empty name; a lane not in the config without --on-delivered (the
// way to reset a removed lane); a bad --on-delivered; --on-delivered for a
// configured lane, whose own setting decides. A removed lane's reset with
// --on-delivered reaches the store (SQLite has no log lanes to reset).
func TestLaneResetArguments(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "")
	if code, _, e := cliRun(t, "migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: %s", e)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{""}, "lane name is empty"},
		{[]string{"gone"}, "--on-delivered mark, delete or leave"},
		{[]string{"gone", "--on-delivered", "sideways"}, `--on-delivered "sideways": want mark, delete or leave`},
		{[]string{"main", "--on-delivered", "delete"}, "lane main's comes from the config (on_delivered: mark)"},
		{[]string{"gone", "--on-delivered", "delete"}, "has no log lanes"},
	} {
		args := append([]string{"lane", "reset"}, tc.args...)
		code, out, e := cliRun(t, append(args, "--config", cfg)...)
		if code != ExitUsage || !strings.Contains(e, tc.want) {
			t.Errorf("%q: exit %d, want 2 and %q\nstdout: %s\nstderr: %s", tc.args, code, tc.want, out, e)
		}
	}
}
