package cli

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// Rule: `herald run` with admin.token serves the actions to callers that
// send it and refuses the others, and says so when it starts.
func TestRunServesActionsWithTheToken(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "")
	appendConfig(t, cfg, "admin: {token: s3cret}\n")
	run := startChild(t, dir, "run", "--config", cfg)
	addr := adminAddr(t, run)
	// The admin server answers before the store is open; actions wait for it.
	waitFor(t, 30*time.Second, "/readyz 200", func() bool { code, _ := readyz(addr); return code == http.StatusOK })
	if !strings.Contains(run.stderr.String(), "actions need the admin token") {
		t.Errorf("herald run must say actions need the token:\n%s", run.stderr.String())
	}
	pause := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/lanes/main/pause", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := pause(""); code != http.StatusUnauthorized {
		t.Fatalf("pause without the token: %d; want 401", code)
	}
	if code := pause("s3cret"); code != http.StatusOK {
		t.Fatalf("pause with the token: %d; want 200", code)
	}
	run.terminate(t)
	if _, out, _ := cliRun(t, "status", "--config", cfg, "--json"); !strings.Contains(out, `"paused":true`) {
		t.Fatalf("the lane paused through the API must show paused: %s", out)
	}
}
