package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// streamLog consumes a JetStream stream from its start and keeps each
// stored message's ce-id and Nats-Msg-Id.
type streamLog struct {
	mu          sync.Mutex
	ceIDs, msgs []string
}

func (l *streamLog) add(m jetstream.Msg) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ceIDs = append(l.ceIDs, m.Headers().Get("ce-id"))
	l.msgs = append(l.msgs, m.Headers().Get(jetstream.MsgIDHeader))
	_ = m.Ack()
}

func (l *streamLog) stored() (ceIDs, msgIDs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.ceIDs...), append([]string(nil), l.msgs...)
}

// Rule: with a real `herald run` relaying to a NATS JetStream stream whose
// duplicate window is 2 minutes, `herald replay` of a delivered event seconds
// after its delivery (inside the window) is stored and reaches a consumer
// again, twice for two replays: each replay has its own Nats-Msg-Id
// (EVENT_ID/replay-N) while ce-id stays the event id; and the command
// reports the publication and no duplicate.
func TestReplayInsideTheNATSDuplicateWindowIsDelivered(t *testing.T) {
	url := testenv.RequireNATS(t)
	sfx := strings.ToLower(herald.NewID()[24:])
	stream, prefix := "HERALD_CLIREPLAY_"+strings.ToUpper(sfx), "hclireplay"+sfx
	t.Cleanup(func() { deleteNATSStream(url, stream) })
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, fmt.Sprintf(`store: {driver: sqlite, dsn: %s}
brokers:
  events: {type: nats, url: %q, stream: %s, subjects: ["%s.>"], create_stream: true}
lanes:
  - {name: main, table: main_outbox, destination: "%s.{topic}", poll_interval: 50ms}
`, filepath.Join(dir, "h.db"), url, stream, prefix, prefix))
	id := herald.NewID()
	if code, _, e := cliRun(t, "enqueue", "--create", "--config", cfg, "--type", "GiftSent", "--topic", "gifts", "--id", id); code != 0 {
		t.Fatal(e)
	}
	run := startChild(t, dir, "run", "--config", cfg)
	defer run.terminate(t)
	log := consumeStream(t, url, stream)
	waitFor(t, 30*time.Second, "the event in the stream", func() bool { c, _ := log.stored(); return len(c) == 1 })

	s := openStore(t, dir)
	for n := 1; n <= 2; n++ {
		// The ack reaches the stream before the relay marks the row.
		waitFor(t, 30*time.Second, "the event marked delivered", func() bool {
			r, err := s.Get(context.Background(), "main_outbox", id)
			return err == nil && r.Status == store.StatusDelivered
		})
		code, out, e := cliRun(t, "replay", "--config", cfg, "--status", "delivered", id, "--yes", "--rate", "0")
		if code != 0 || !strings.Contains(out, "replayed 1 event(s)") ||
			!strings.Contains(out, "published 1, dropped by the broker as duplicates 0, not published yet 0, dead 0") {
			t.Fatalf("replay %d: %d %q %q; want 1 published, no duplicate", n, code, out, e)
		}
		waitFor(t, 30*time.Second, fmt.Sprintf("replay %d in the stream", n), func() bool { c, _ := log.stored(); return len(c) == n+1 })
	}
	ceIDs, msgIDs := log.stored()
	want := []string{id, id + "/replay-1", id + "/replay-2"}
	if fmt.Sprint(msgIDs) != fmt.Sprint(want) || fmt.Sprint(ceIDs) != fmt.Sprint([]string{id, id, id}) {
		t.Fatalf("stored Nats-Msg-Ids %v with ce-ids %v; want %v, each with ce-id %s", msgIDs, ceIDs, want, id)
	}
	checkDuplicateWindow(t, url, stream)
}

// consumeStream starts an ordered consumer on stream, from its start.
func consumeStream(t *testing.T, url, stream string) *streamLog {
	t.Helper()
	js := jetStream(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var cons jetstream.Consumer
	var err error
	waitFor(t, 30*time.Second, "the stream "+stream, func() bool {
		cons, err = js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
		return err == nil
	})
	log := &streamLog{}
	cc, err := cons.Consume(log.add)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return log
}

// checkDuplicateWindow: the replays above happened inside the stream's
// duplicate window, so the same Nats-Msg-Id would have been dropped.
func checkDuplicateWindow(t *testing.T, url, stream string) {
	t.Helper()
	s, err := jetStream(t, url).Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	if w := s.CachedInfo().Config.Duplicates; w < time.Minute {
		t.Fatalf("the stream's duplicate window is %v; the test needs one longer than its replays (a minute)", w)
	}
}

// jetStream connects to url for the rest of the test.
func jetStream(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
