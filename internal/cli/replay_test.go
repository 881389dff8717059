package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

// deliverAll claims every row of table and marks it delivered.
func deliverAll(t *testing.T, s store.Store, table string) []store.Record {
	t.Helper()
	ctx := context.Background()
	recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "t", Token: 9, Lease: time.Minute, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	ds := make([]store.Delivery, len(recs))
	for i, r := range recs {
		ds[i] = store.Delivery{ID: r.ID}
	}
	if _, err := s.Complete(ctx, store.Fence{Table: table, Token: 9}, ds); err != nil {
		t.Fatal(err)
	}
	return recs
}

// Rule: `herald replay` selects delivered events by type, shows a dry run
// (count and sample) that changes nothing, refuses an unfiltered replay
// without --all, replays keeping row and event ids, paces itself to
// --rate, and records who replayed each event; `dead replay` records too.
func TestReplayByQuery(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "")
	for i, typ := range []string{"A", "A", "B", "A", "A", "A"} {
		id := typ + "-" + string(rune('1'+i))
		if code, _, e := cliRun(t, "enqueue", "--create", "--config", cfg, "--type", typ, "--id", id); code != 0 {
			t.Fatal(e)
		}
	}
	s := openStore(t, dir)
	ctx := context.Background()
	before := map[string]int64{}
	for _, r := range deliverAll(t, s, "main_outbox") {
		before[r.Event.ID] = r.ID
	}

	code, out, e := cliRun(t, "replay", "--config", cfg, "--status", "delivered", "--type", "A", "--dry-run", "--sample", "2")
	if code != 0 || !strings.Contains(out, "would replay 5 event(s) of lane main; the first 2:") ||
		!strings.Contains(out, "A-1") || !strings.Contains(out, "A-2") || strings.Contains(out, "A-4") {
		t.Fatalf("dry run: %d %q %q", code, out, e)
	}
	if r, _ := s.Get(ctx, "main_outbox", "A-1"); r.Status != store.StatusDelivered {
		t.Fatalf("a dry run changed A-1 to %s", r.Status)
	}
	if code, _, e := cliRun(t, "replay", "--config", cfg, "--status", "delivered", "--yes"); code != ExitUsage || !strings.Contains(e, "--all") {
		t.Fatalf("an unfiltered replay must ask for --all: %d %q", code, e)
	}
	if code, _, e := cliRun(t, "replay", "--config", cfg, "--status", "pending", "--all"); code != ExitUsage || !strings.Contains(e, `"pending"`) {
		t.Fatalf("--status pending: %d %q", code, e)
	}

	start := time.Now()
	code, out, e = cliRun(t, "replay", "--config", cfg, "--status", "delivered", "--type", "A", "--since", "1h",
		"--rate", "3", "--yes", "--by", "alice", "--reason", "consumer lost its state", "--wait", "300ms")
	took := time.Since(start)
	if code != 0 || !strings.Contains(out, "replayed 5 event(s)") ||
		!strings.Contains(out, "5 not published within 300ms: is `herald run` running") {
		t.Fatalf("replay with no relay running: %d %q %q; want 5 replayed, reported not published", code, out, e)
	}
	// 5 events at 3 per second: a batch of 3 at once, the other 2 a second later.
	if took < 900*time.Millisecond {
		t.Errorf("5 events at --rate 3 took %v; want about a second", took)
	}
	for id, rowID := range before {
		r, err := s.Get(ctx, "main_outbox", id)
		want := store.StatusPending
		if strings.HasPrefix(id, "B") {
			want = store.StatusDelivered
		}
		if err != nil || r.Status != want || r.ID != rowID {
			t.Errorf("%s: %s row %d (%v); want %s row %d", id, r.Status, r.ID, err, want, rowID)
		}
	}
	hist, err := s.Replays().ReplayHistory(ctx, "main_outbox", "A-1")
	if err != nil || len(hist) != 1 || hist[0].By != "alice" || hist[0].Reason != "consumer lost its state" || hist[0].From != store.StatusDelivered {
		t.Fatalf("history of A-1: %+v %v", hist, err)
	}

	killAll(t, s, "main_outbox")
	if code, out, e := cliRun(t, "dead", "replay", "--config", cfg, "A-2", "--wait", "0"); code != 0 || !strings.Contains(out, "replayed 1") {
		t.Fatalf("dead replay: %d %q %q", code, out, e)
	}
	hist, err = s.Replays().ReplayHistory(ctx, "main_outbox", "A-2")
	if err != nil || len(hist) != 2 || hist[1].From != store.StatusDead || !strings.Contains(hist[1].By, "@") {
		t.Fatalf("dead replay must be in the history: %+v %v", hist, err)
	}
}
