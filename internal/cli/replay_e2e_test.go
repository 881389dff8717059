package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// webhookLog is a webhook receiver that keeps the webhook-id of every
// request, in arrival order.
type webhookLog struct {
	mu  sync.Mutex
	ids []string
}

func (l *webhookLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids = append(l.ids, r.Header.Get("webhook-id"))
}

func (l *webhookLog) received() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ids)
}

// Rule: with a real `herald run` relaying an ordered lane to a webhook,
// `herald replay` of one key's delivered events makes the relay publish
// them again with their original event ids, in their original order, and
// only them.
func TestReplayRepublishesInOrderWithTheSameIDs(t *testing.T) {
	hooks := &webhookLog{}
	receiver := httptest.NewServer(hooks)
	defer receiver.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
store: {driver: sqlite, dsn: %s}
brokers:
  hook: {type: webhook, secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}
lanes:
  - {name: main, table: main_outbox, broker: hook, destination: %q, ordering: key, poll_interval: 50ms}
`, filepath.Join(dir, "h.db"), receiver.URL+"/{topic}")), 0o600)
	var keyK []string
	for i := range 6 {
		key := []string{"K", "J"}[i%2]
		id := fmt.Sprintf("%s-%d", key, i)
		if key == "K" {
			keyK = append(keyK, id)
		}
		if code, _, e := cliRun(t, "enqueue", "--create", "--config", cfg, "--type", "T", "--key", key, "--id", id); code != 0 {
			t.Fatal(e)
		}
	}
	run := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 60*time.Second, "6 events at the webhook", func() bool { return len(hooks.received()) == 6 })

	code, out, e := cliRun(t, "replay", "--config", cfg, "--status", "delivered", "--key", "K", "--yes", "--rate", "0")
	if code != 0 || !strings.Contains(out, "replayed 3 event(s)") {
		t.Fatalf("replay: %d %q %q", code, out, e)
	}
	waitFor(t, 60*time.Second, "the 3 replayed events at the webhook", func() bool { return len(hooks.received()) >= 9 })
	// Once nothing is pending or in flight, nothing more can be published.
	s := openStore(t, dir)
	waitFor(t, 60*time.Second, "all 6 delivered again", func() bool {
		st := mainStats(t, s)
		return st.Delivered == 6 && st.Pending+st.Retrying+st.InFlight == 0
	})
	got := hooks.received()
	if again := got[6:]; !slices.Equal(again, keyK) {
		t.Fatalf("republished %v; want key K's events with their ids in their order %v", again, keyK)
	}
	run.terminate(t)
}
