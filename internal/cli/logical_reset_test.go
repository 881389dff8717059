package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/postgres"
)

// Rule: `herald lane reset` refuses a log lane a relay is reading (exit
// 1, naming the holder); once the relays stopped it applies the journal,
// drops the slot and deletes the position, and the lane's next start
// publishes the rows committed while it was stopped once (handed to its
// polling workers) and the rows it delivered before never again.
func TestLaneResetLogLane(t *testing.T) {
	dir, dsn, natsURL := logicalPostgresAndNATS(t)
	cfg := logConfig(t, dir, dsn, natsURL)
	if code, out := runChildSync(t, dir, "migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: exit %d\n%s", code, out)
	}
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	delivered := func() int64 {
		st, err := s.Stats(context.Background(), store.Scope{Table: "log_outbox"})
		if err != nil {
			t.Fatal(err)
		}
		return st.Delivered
	}
	run := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 30*time.Second, "the relay reading", func() bool { return strings.Contains(run.stderr.String(), "log reader active") })
	enqueueMany(t, s, "log_outbox", 100)
	waitFor(t, 60*time.Second, "100 delivered", func() bool { return delivered() == 100 })
	if code, out := runChildSync(t, dir, "lane", "reset", "main", "--config", cfg); code != 1 || !strings.Contains(out, "holds it") {
		t.Fatalf("lane reset while a relay reads: exit %d, want 1 naming the holder\n%s", code, out)
	}
	run.terminate(t)
	enqueueMany(t, s, "log_outbox", 50)

	code, out := runChildSync(t, dir, "lane", "reset", "main", "--config", cfg)
	if code != 0 || !strings.Contains(out, "slot herald_main dropped") {
		t.Fatalf("lane reset: exit %d, want 0 and the slot dropped\n%s", code, out)
	}
	checkLaneForgotten(t, s, "after the reset")
	if code, out := runChildSync(t, dir, "lane", "reset", "main", "--config", cfg); code != 0 || !strings.Contains(out, "nothing to reset") {
		t.Fatalf("second reset: exit %d, want 0 and nothing to reset\n%s", code, out)
	}
	if code, out := runChildSync(t, dir, "lane", "reset", "nosuch", "--config", cfg); code != 2 || !strings.Contains(out, `no lane "nosuch"`) {
		t.Fatalf("reset of an unknown lane: exit %d, want 2\n%s", code, out)
	}

	run = startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 60*time.Second, "all 150 delivered", func() bool { return delivered() == 150 })
	run.terminate(t)
	if n := streamLen(t, natsURL, "LOG"); n != 150 {
		t.Fatalf("the stream holds %d messages, want 150: each event once across the reset", n)
	}
	resetRemovedLane(t, dir, dsn, natsURL, s)
}

// resetRemovedLane: a log lane taken out of the config is reset with
// --on-delivered (its slot and position go), as the docs ask before or
// after removing one.
func resetRemovedLane(t *testing.T, dir, dsn, natsURL string, s *postgres.Store) {
	t.Helper()
	cfg := filepath.Join(dir, "without-main.yaml")
	writeFile(t, cfg, fmt.Sprintf(`
store: {driver: postgres, dsn: %q}
brokers:
  events: {type: nats, url: %q, stream: LOG, subjects: ["log.>"], create_stream: true}
lanes:
  - {name: other, table: other_outbox, destination: "log.{topic}"}
`, dsn, natsURL))
	if code, out := runChildSync(t, dir, "migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: exit %d\n%s", code, out)
	}
	if code, out := runChildSync(t, dir, "lane", "reset", "main", "--config", cfg); code != ExitUsage || !strings.Contains(out, "--on-delivered") {
		t.Fatalf("reset of a removed lane without --on-delivered: exit %d, want %d naming the flag\n%s", code, ExitUsage, out)
	}
	code, out := runChildSync(t, dir, "lane", "reset", "main", "--config", cfg, "--on-delivered", "mark")
	if code != 0 || !strings.Contains(out, "slot herald_main dropped") {
		t.Fatalf("reset of a removed lane: exit %d, want 0 and the slot dropped\n%s", code, out)
	}
	checkLaneForgotten(t, s, "after resetting the removed lane")
}

// checkLaneForgotten fails unless lane main has no slot and no position.
func checkLaneForgotten(t *testing.T, s *postgres.Store, when string) {
	t.Helper()
	var slots, positions int
	s.DB().QueryRow("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'herald_main'").Scan(&slots)
	s.DB().QueryRow("SELECT count(*) FROM herald_log_lanes WHERE lane = 'main'").Scan(&positions)
	if slots != 0 || positions != 0 {
		t.Fatalf("%s: %d slots and %d positions of lane main, want none", when, slots, positions)
	}
}
