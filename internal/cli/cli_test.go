package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald/internal/testenv"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/sqlite"
)

func TestMain(m *testing.M) {
	if args := os.Getenv(childArgsEnv); args != "" {
		runChild(args) // this test binary is playing `herald`; it exits
	}
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// herald runs the CLI in process and returns its exit code and output.
func cliRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeConfig writes a config using a SQLite file and a stdout broker in
// dir, with extra YAML appended to the lane, and returns its path.
func writeConfig(t *testing.T, dir, laneExtra string) string {
	t.Helper()
	cfg := "store: {driver: sqlite, dsn: " + filepath.Join(dir, "h.db") + "}\n" +
		"brokers:\n  out: {type: stdout}\n" +
		"lanes:\n  - name: main\n    table: main_outbox\n    destination: \"x.{topic}\"\n" + laneExtra
	path := filepath.Join(dir, "herald.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// appendConfig appends yaml to the config file at path.
func appendConfig(t *testing.T, path, yaml string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(yaml); err != nil {
		t.Fatal(err)
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	good := writeConfig(t, dir, "")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("lanes: [{name: a, destination: x, colour: red}]\n"), 0o600)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"fly"}, ExitUsage, "unknown command"},
		{"unknown flag", []string{"status", "--colour"}, ExitUsage, "unknown flag"},
		{"invalid config", []string{"status", "--config", bad}, ExitUsage, "colour"},
		{"missing config file", []string{"status", "--config", filepath.Join(dir, "nope.yaml")}, ExitUsage, "nope.yaml"},
		{"enqueue without type", []string{"enqueue", "--config", good}, ExitUsage, "--type is required"},
		{"enqueue bad payload", []string{"enqueue", "--config", good, "--type", "T", "--payload", "{oops"}, ExitUsage, "not valid JSON"},
		{"enqueue bad header", []string{"enqueue", "--config", good, "--type", "T", "--header", "novalue"}, ExitUsage, "not k=v"},
		{"enqueue unknown lane", []string{"enqueue", "--config", good, "--type", "T", "--lane", "nope"}, ExitUsage, `no lane "nope"`},
		{"replay needs ids or --all", []string{"dead", "replay", "--config", good}, ExitUsage, "--all"},
		{"ok", []string{"version"}, ExitOK, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := cliRun(t, c.args...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d (want %d), stderr %q (want it to mention %q)", code, c.code, errOut, c.want)
			}
		})
	}
}

func TestEnqueueThenStatusJSON(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "")
	code, out, errOut := cliRun(t, "enqueue", "--config", cfg, "--topic", "wallet", "--type", "WalletGiftDebited",
		"--key", "u1", "--tenant", "app1", "--header", "command_id=c1", "--payload", `{"gift":"rose"}`)
	if code != 0 {
		t.Fatalf("enqueue: exit %d: %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	code, out, errOut = cliRun(t, "status", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	var st struct {
		Lanes []map[string]any `json:"lanes"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json is not JSON: %v\n%s", err, out)
	}
	keys := []string{"name", "table", "pending", "retrying", "in_flight", "delivered", "dead", "oldest_pending_age_seconds", "paused"}
	if len(st.Lanes) != 1 || len(st.Lanes[0]) != len(keys) || st.Lanes[0]["pending"] != 1.0 {
		t.Fatalf("status --json = %s; want exactly the keys %v and pending 1", out, keys)
	}
	s := openStore(t, dir)
	rec, err := s.Get(context.Background(), "main_outbox", id)
	if err != nil || rec.Event.Tenant != "app1" || rec.Event.Headers["command_id"] != "c1" || rec.Event.PartitionKey != "u1" {
		t.Fatalf("enqueued row = %+v, %v", rec, err)
	}
}

func openStore(t *testing.T, dir string) store.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "h.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Rule: an operator can list, show, replay and purge dead events.
func TestDeadListShowReplayPurge(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "")
	for _, id := range []string{"dead-1", "dead-2"} {
		if code, _, e := cliRun(t, "enqueue", "--config", cfg, "--type", "T", "--id", id, "--payload", `{"n":1}`); code != 0 {
			t.Fatal(e)
		}
	}
	s := openStore(t, dir)
	killAll(t, s, "main_outbox")
	_, out, _ := cliRun(t, "dead", "list", "--config", cfg, "--json")
	if strings.Count(out, `"event_id"`) != 2 || !strings.Contains(out, "poisoned") {
		t.Fatalf("dead list --json = %q", out)
	}
	_, out, _ = cliRun(t, "dead", "show", "--config", cfg, "dead-1")
	if !strings.Contains(out, `"n": 1`) {
		t.Fatalf("dead show must print the payload: %q", out)
	}
	if code, out, e := cliRun(t, "dead", "replay", "--config", cfg, "dead-1"); code != 0 || !strings.Contains(out, "replayed 1") {
		t.Fatalf("replay: %d %q %q", code, out, e)
	}
	rec, _ := s.Get(context.Background(), "main_outbox", "dead-1")
	if rec.Status != store.StatusPending || rec.Attempts != 0 {
		t.Fatalf("replayed row = %s with %d attempts; want pending with 0", rec.Status, rec.Attempts)
	}
	if code, out, _ := cliRun(t, "dead", "purge", "--config", cfg, "--all"); code != 0 || !strings.Contains(out, "purged 1") {
		t.Fatalf("purge --all: %d %q", code, out)
	}
	if code, _, e := cliRun(t, "dead", "replay", "--config", cfg, "dead-2"); code != ExitFailure || !strings.Contains(e, "not dead") {
		t.Fatalf("replaying a purged event must fail clearly: %d %q", code, e)
	}
}

// killAll claims every row of table and moves it to dead.
func killAll(t *testing.T, s store.Store, table string) {
	t.Helper()
	ctx := context.Background()
	recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "t", Token: 7, Lease: time.Minute, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var fs []store.Failure
	for _, r := range recs {
		fs = append(fs, store.Failure{ID: r.ID, Error: "poisoned payload"})
	}
	if _, err := s.Kill(ctx, store.Fence{Table: table, Token: 7}, fs); err != nil {
		t.Fatal(err)
	}
}
