package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/drivers"
	"github.com/heraldhq/herald/internal/demo"
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

// testDrivers are the herald binary's drivers (cmd/herald's).
var testDrivers = config.Drivers{Brokers: drivers.Brokers(), Stores: drivers.Stores()}

// demoCommand adds `herald demo`, as cmd/herald does.
func demoCommand(env Env) *cobra.Command { return demo.Command(env) }

// herald runs the CLI in process and returns its exit code and output.
func cliRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), testDrivers, args, &out, &errOut, demoCommand)
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
		{"enqueue reserved header", []string{"enqueue", "--config", good, "--type", "T", "--header", "Ce-Id=forwarded-1"}, ExitUsage,
			`"Ce-Id" is the CloudEvents id attribute`},
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
	code, out, errOut := cliRun(t, "enqueue", "--create", "--config", cfg, "--topic", "wallet", "--type", "WalletGiftDebited",
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
	keys := []string{"name", "store", "table", "pending", "retrying", "in_flight", "delivered", "dead", "oldest_pending_age_seconds", "paused"}
	if len(st.Lanes) != 1 || len(st.Lanes[0]) != len(keys) || st.Lanes[0]["pending"] != 1.0 {
		t.Fatalf("status --json = %s; want exactly the keys %v and pending 1", out, keys)
	}
	s := openStore(t, dir)
	rec, err := s.Get(context.Background(), "main_outbox", id)
	if err != nil || rec.Event.Tenant != "app1" || rec.Event.Headers["command_id"] != "c1" || rec.Event.PartitionKey != "u1" {
		t.Fatalf("enqueued row = %+v, %v", rec, err)
	}
}

// Rule: status shows, per table, the pending rows that no configured lane
// selects (a lane with include_types says pending 0 for them), in text and
// as "unselected" in --json, keeping the lanes' fields as they were.
func TestStatusShowsRowsNoLaneSelects(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "    include_types: [A]\n")
	for _, typ := range []string{"A", "B", "B"} {
		if code, _, errOut := cliRun(t, "enqueue", "--create", "--config", cfg, "--type", typ); code != ExitOK {
			t.Fatalf("enqueue %s: %s", typ, errOut)
		}
	}
	code, out, errOut := cliRun(t, "status", "--config", cfg, "--json")
	if code != ExitOK {
		t.Fatalf("status --json: exit %d: %s", code, errOut)
	}
	var st struct {
		Lanes      []map[string]any `json:"lanes"`
		Unselected []map[string]any `json:"unselected"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json is not JSON: %v\n%s", err, out)
	}
	if len(st.Lanes) != 1 || len(st.Lanes[0]) != 10 || st.Lanes[0]["pending"] != 1.0 {
		t.Errorf("status --json lanes = %v; want main with its 10 fields (the 8 of before, paused and store) and pending 1", st.Lanes)
	}
	if len(st.Unselected) != 1 || st.Unselected[0]["table"] != "main_outbox" || st.Unselected[0]["rows"] != 2.0 {
		t.Errorf("status --json unselected = %v; want main_outbox with 2 rows", st.Unselected)
	}
	code, out, errOut = cliRun(t, "status", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	_, below, ok := strings.Cut(out, "UNSELECTED")
	if !ok || !regexp.MustCompile(`(?m)^\s*default\s+main_outbox\s+2\s*$`).MatchString(below) {
		t.Errorf("status text does not show main_outbox with 2 unselected rows:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^\s*main\s+default\s+main_outbox\s+1\s`).MatchString(out) {
		t.Errorf("status text lost lane main's pending 1:\n%s", out)
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
		if code, _, e := cliRun(t, "enqueue", "--create", "--config", cfg, "--type", "T", "--id", id, "--payload", `{"n":1}`); code != 0 {
			t.Fatal(e)
		}
	}
	s := openStore(t, dir)
	killAll(t, s, "main_outbox")
	_, out, _ := cliRun(t, "dead", "list", "--config", cfg, "--json")
	if strings.Count(out, `"event_id"`) != 2 || !strings.Contains(out, "poisoned") {
		t.Fatalf("dead list --json = %q", out)
	}
	_, out, _ = cliRun(t, "dead", "list", "--config", cfg)
	if !strings.Contains(out, "DIED (UTC)") || !strings.Contains(out, time.Now().UTC().Format(time.DateOnly)) {
		t.Fatalf("dead list must say when each event died: %q", out)
	}
	_, out, _ = cliRun(t, "dead", "show", "--config", cfg, "dead-1")
	if !strings.Contains(out, `"n": 1`) {
		t.Fatalf("dead show must print the payload: %q", out)
	}
	if !regexp.MustCompile(`"errors": \[\s*\{\s*"attempt": 1,\s*"at": "[^"]+",\s*"error": "poisoned payload"`).MatchString(out) {
		t.Fatalf("dead show must print each failed attempt's error: %q", out)
	}
	if code, out, e := cliRun(t, "dead", "replay", "--config", cfg, "dead-1", "--wait", "0"); code != 0 || !strings.Contains(out, "replayed 1") {
		t.Fatalf("replay: %d %q %q", code, out, e)
	}
	rec, _ := s.Get(context.Background(), "main_outbox", "dead-1")
	if rec.Status != store.StatusPending || rec.Attempts != 0 {
		t.Fatalf("replayed row = %s with %d attempts; want pending with 0", rec.Status, rec.Attempts)
	}
	if code, out, _ := cliRun(t, "dead", "purge", "--config", cfg, "--all", "--dry-run"); code != 0 || !strings.Contains(out, "would purge 1") {
		t.Fatalf("purge --all --dry-run: %d %q", code, out)
	}
	answer(t, "n\n")
	if code, _, e := cliRun(t, "dead", "purge", "--config", cfg, "--all"); code != ExitFailure || !strings.Contains(e, "--yes") {
		t.Fatalf("purge declined at the prompt must change nothing and exit 1: %d %q", code, e)
	}
	answer(t, "y\n")
	if code, out, _ := cliRun(t, "dead", "purge", "--config", cfg, "--all"); code != 0 || !strings.Contains(out, "purged 1") {
		t.Fatalf("purge --all confirmed: %d %q", code, out)
	}
	if code, _, e := cliRun(t, "dead", "replay", "--config", cfg, "dead-2", "nope-3"); code != ExitFailure ||
		!strings.Contains(e, "event dead-2 is not in table main_outbox") || !strings.Contains(e, "event nope-3") {
		t.Fatalf("replaying purged and unknown events must name each: %d %q", code, e)
	}
	if code, _, e := cliRun(t, "dead", "replay", "--config", cfg, "--all", "dead-1"); code != ExitUsage || !strings.Contains(e, "to replay,") {
		t.Fatalf("replay with ids and --all: %d %q", code, e)
	}
}

// answer makes the next confirmation prompt read text.
func answer(t *testing.T, text string) {
	t.Helper()
	old := stdinOr
	stdinOr = func() io.Reader { return strings.NewReader(text) }
	t.Cleanup(func() { stdinOr = old })
}

// Rule: the version is there as a flag and as JSON; messages do not repeat
// "herald: "; a bad --log-level is refused by every command.
func TestVersionAndMessages(t *testing.T) {
	if code, out, _ := cliRun(t, "--version"); code != 0 || !strings.HasPrefix(out, "herald ") || !strings.Contains(out, "go1.") {
		t.Fatalf("--version: %d %q", code, out)
	}
	code, out, _ := cliRun(t, "version", "--json")
	var v buildInfo
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Module != "github.com/heraldhq/herald" || v.GoVersion == "" {
		t.Fatalf("version --json: %d %q", code, out)
	}
	if code, _, e := cliRun(t, "status", "--log-level", "verbose"); code != ExitUsage || !strings.Contains(e, `"verbose"`) {
		t.Fatalf("status --log-level verbose: %d %q", code, e)
	}
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "    max_payload: 10\n")
	if code, _, e := cliRun(t, "enqueue", "--create", "--config", cfg, "--type", "T", "--payload", `{"big":"0123456789"}`); code != ExitUsage && code != ExitFailure || strings.Contains(e, "herald: herald:") {
		t.Fatalf("payload too large: %d %q", code, e)
	}
	if code, _, _ := cliRun(t, "enqueue", "--config", cfg, "--type", "T", "--id", "e-1"); code != 0 {
		t.Fatal("first enqueue failed")
	}
	if code, out, e := cliRun(t, "enqueue", "--config", cfg, "--type", "T", "--id", "e-1"); code != ExitFailure || out != "" || !strings.Contains(e, "already in main_outbox") {
		t.Fatalf("enqueueing an existing id must say so: %d %q %q", code, out, e)
	}
	if code, _, e := cliRun(t, "status", "--config", writeConfig(t, t.TempDir(), "")); code != ExitFailure || !strings.Contains(e, "herald migrate") {
		t.Fatalf("status on a database never migrated: %d %q", code, e)
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

// Rule: `config check` validates a file laid over the defaults without
// connecting (0 on one key, 2 on an unknown key with the right one
// suggested); `config print` shows the effective config without secrets.
func TestConfigCheckAndPrint(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one.yaml")
	writeFile(t, one, "admin: {addr: \"127.0.0.1:9999\"}\n")
	if code, out, e := cliRun(t, "config", "check", "--config", one); code != 0 || !strings.Contains(out, "config ok") {
		t.Fatalf("config check on a one-key file: %d %q %q", code, out, e)
	}
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "lanes:\n  - name: x\n    batchsize: 3\n")
	if code, _, e := cliRun(t, "config", "check", "--config", bad); code != ExitUsage ||
		!strings.Contains(e, "line 3: lanes[0].batchsize: unknown key, did you mean batch_size?") {
		t.Fatalf("config check on an unknown key: %d %q", code, e)
	}
	secret := filepath.Join(dir, "secret.yaml")
	writeFile(t, secret, "store: {driver: mysql, dsn: \"root:s3cret@tcp(127.0.0.1:1)/test\"}\n"+
		"brokers:\n  w: {type: webhook, secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}\n"+
		"lanes: [{name: a, broker: w, destination: \"https://p.example/{topic}\"}]\n")
	code, out, e := cliRun(t, "config", "print", "--config", secret)
	if code != 0 || strings.Contains(out, "s3cret") || strings.Contains(out, "MfKQ9r8") || !strings.Contains(out, "addr: 127.0.0.1:8080") {
		t.Fatalf("config print: %d %q %q", code, out, e)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Rule: enqueue refuses a payload the lane's broker would refuse: for NATS,
// the server's own max_payload (from its INFO) less the room kept for
// headers, so no event is committed only to go dead a moment later.
func TestEnqueueTakesTheBrokersPayloadLimit(t *testing.T) {
	url := testenv.RequireNATS(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, "store: {driver: sqlite, dsn: "+filepath.Join(dir, "h.db")+"}\n"+
		"brokers:\n  events: {type: nats, url: \""+url+"\", stream: HTLIMIT}\n"+
		"lanes:\n  - {name: main, destination: \"x.{topic}\"}\n")
	over := filepath.Join(dir, "over.json")
	writeFile(t, over, `"`+strings.Repeat("x", nats.DefaultMaxPayload-nats.HeaderAllowance)+`"`)
	code, out, e := cliRun(t, "enqueue", "--create", "--config", cfg, "--type", "T", "--payload", "@"+over)
	if code != ExitUsage || out != "" || !strings.Contains(e, "the limit is 1044480") || !strings.Contains(e, "broker events") {
		t.Fatalf("a payload over the NATS server's limit: %d %q %q", code, out, e)
	}
	under := filepath.Join(dir, "under.json")
	writeFile(t, under, `"`+strings.Repeat("x", nats.DefaultMaxPayload-nats.HeaderAllowance-2)+`"`)
	if code, _, e := cliRun(t, "enqueue", "--config", cfg, "--type", "T", "--payload", "@"+under); code != 0 {
		t.Fatalf("a payload at the limit: %d %q", code, e)
	}
}

// Rule: `projection status` before any projector ran names what is
// missing instead of a SQL error, and creates no database.
func TestProjectionStatusBeforeAnyProjector(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "")
	if code, _, e := cliRun(t, "projection", "status", "--config", cfg); code != ExitFailure || !strings.Contains(e, "herald migrate") {
		t.Fatalf("projection status without a database: %d %q", code, e)
	}
	if _, err := os.Stat(filepath.Join(dir, "h.db")); !os.IsNotExist(err) {
		t.Fatalf("projection status created the database (%v)", err)
	}
	if code, _, e := cliRun(t, "migrate", "--config", cfg); code != 0 {
		t.Fatal(e)
	}
	if code, _, e := cliRun(t, "projection", "status", "--config", cfg); code != ExitFailure ||
		!strings.Contains(e, "no projection table herald_projection_events") || strings.Contains(e, "SQL") {
		t.Fatalf("projection status before any projector: %d %q", code, e)
	}
}
