package projectortest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// ForwardedConfig describes a broker for RunForwarded.
type ForwardedConfig struct {
	// Subscribe returns a new subscriber on the test's subscription; it is
	// called once, before anything is published.
	Subscribe func(tb testing.TB) broker.Subscriber
	// Publisher is the relay lane's publisher, on the subscription's
	// stream or topic; the suite does not close it.
	Publisher broker.Publisher
	// Destination is the lane's destination template (a subject, topic,
	// routing key, stream name or URL).
	Destination string
	// HeaderPrefix is the adapter's CloudEvents prefix ("ce-", "ce_",
	// "cloudEvents_"): the copied headers use it, in varied case.
	HeaderPrefix string
	// Events is how many forwarded events to send. Defaults to 20.
	Events int
	// Within bounds relaying and projecting. Defaults to 1 minute.
	Within time.Duration
}

// RunForwarded checks exactly-once projection of events whose rows copied
// an incoming CloudEvent's attributes ({"Ce-Id":"forwarded-1",
// "Ce-Type":"Forwarded"} under the adapter's prefix, in varied case), as a
// service forwarding events writes them. The rows go in by plain SQL (which
// bypasses Enqueue's refusal) into a SQLite outbox, a relay publishes them,
// and a projector applies them from cfg.Subscribe: every event must be
// applied once under its own id and type, so the ledger holds one row per
// event, never one "forwarded-1" for many.
func RunForwarded(t *testing.T, cfg ForwardedConfig) {
	if cfg.Events <= 0 {
		cfg.Events = 20
	}
	if cfg.Within <= 0 {
		cfg.Within = time.Minute
	}
	s := SQLite(filepath.Join(t.TempDir(), "forwarded.db"))(t)
	outbox, ledger := Name("herald_fwd"), Name("herald_fwd_pe")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Migrate(ctx, outbox); err != nil {
		t.Fatal(err)
	}
	if err := s.MigrateProjections(ctx, ledger); err != nil {
		t.Fatal(err)
	}
	model := NewModel(t, s)
	// Subscribed first: some sources start a new group at the stream's end.
	sub := cfg.Subscribe(t)
	t.Cleanup(func() { _ = sub.Close() })
	insertForwarded(t, s, outbox, cfg)
	relayAll(ctx, t, s, outbox, cfg)
	kept := herald.RenamedHeaderPrefix + strings.ToLower(cfg.HeaderPrefix) + "id"
	seen := projectForwarded(ctx, t, s, sub, model, ledger, kept, cfg.Events, cfg.Within)
	checkForwarded(t, s, model, ledger, seen, cfg.Events)
}

// insertForwarded writes the rows with a plain INSERT; event i bumps its
// own counter, forwardedKey(i).
func insertForwarded(t *testing.T, s Store, table string, cfg ForwardedConfig) {
	t.Helper()
	q := "INSERT INTO " + table + " (event_id, topic, event_type, partition_key, headers, payload) VALUES (?, ?, ?, ?, ?, ?)"
	for i := range cfg.Events {
		headers, _ := json.Marshal(brokertest.CollidingHeaders(cfg.HeaderPrefix, i))
		payload, _ := json.Marshal(Payload{Key: forwardedKey(i), Seq: 1})
		if _, err := s.DB().Exec(q, herald.NewID(), "count", "Counted", "forwarded", string(headers), payload); err != nil {
			t.Fatalf("plain INSERT: %v", err)
		}
	}
}

func forwardedKey(i int) string { return fmt.Sprintf("f%03d", i) }

// relayAll runs a relay on the outbox until every row is delivered.
func relayAll(ctx context.Context, t *testing.T, s Store, table string, cfg ForwardedConfig) {
	t.Helper()
	r, err := relay.New(relay.Config{Store: s, Logger: slog.New(slog.DiscardHandler), Lanes: []relay.Lane{{
		Name: "forwarded", Table: table, Publisher: cfg.Publisher, Destination: broker.MustParseTemplate(cfg.Destination),
		PollInterval: 50 * time.Millisecond, PublishTimeout: 10 * time.Second,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	wg.Go(func() {
		if err := r.Run(rctx); err != nil {
			t.Errorf("relay: %v", err)
		}
	})
	var st store.LaneStats
	Eventually(t, cfg.Within, fmt.Sprintf("[relayed] %d rows delivered", cfg.Events), func() bool {
		st, err = s.Stats(ctx, store.Scope{Table: table})
		return err == nil && st.Delivered == int64(cfg.Events)
	})
}

// forwardedSeen is what the projector's handler saw (outside its
// transaction: the model counts the applications that committed).
type forwardedSeen struct {
	mu  sync.Mutex
	ids map[string]bool // event ids handled
	bad []string        // events read with a wrong type or without the kept original id
}

// projectForwarded runs a projector until its ledger holds events rows or
// stops growing for a while, and returns what the handler saw. With kept
// set, each event must carry the copied id "forwarded-1" in that header.
func projectForwarded(ctx context.Context, t *testing.T, s Store, sub broker.Subscriber, model *Model, ledger, kept string,
	events int, within time.Duration) *forwardedSeen {
	t.Helper()
	seen := &forwardedSeen{ids: map[string]bool{}}
	handler := func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
		seen.mu.Lock()
		seen.ids[ev.ID] = true
		if ev.Type != "Counted" || (kept != "" && ev.Headers[kept] != "forwarded-1") {
			seen.bad = append(seen.bad, fmt.Sprintf("id %s type %q %s=%q", ev.ID, ev.Type, kept, ev.Headers[kept]))
		}
		seen.mu.Unlock()
		return model.Bump(ctx, tx, ev)
	}
	p, err := projector.New(projector.Config{Store: s, Handler: handler, Logger: slog.New(slog.DiscardHandler),
		Settings: projector.Settings{Name: "forwarded", Table: ledger,
			Backoff: projector.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := p.Run(pctx, sub); err != nil {
			t.Errorf("projector: %v", err)
		}
	})
	waitLedger(t, s, ledger, int64(events), within)
	stop()
	wg.Wait()
	return seen
}

// waitLedger waits until the ledger has want done rows, or has not grown
// for 3 seconds (events collapsed into one id never add rows), or within
// passes.
func waitLedger(t *testing.T, s Store, ledger string, want int64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last int64 = -1
	lastChange := time.Now()
	for time.Now().Before(deadline) {
		st, err := s.ProjectionStats(context.Background(), ledger, "forwarded")
		var done int64
		if err == nil && len(st) == 1 {
			done = st[0].Done
		}
		if done >= want {
			return
		}
		if done != last {
			last, lastChange = done, time.Now()
		} else if done > 0 && time.Since(lastChange) > 3*time.Second {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkForwarded checks one application per event, under its own id.
func checkForwarded(t *testing.T, s Store, model *Model, ledger string, seen *forwardedSeen, events int) {
	t.Helper()
	st, err := s.ProjectionStats(context.Background(), ledger, "forwarded")
	if err != nil || len(st) != 1 || st[0].Done != int64(events) || st[0].Failed+st[0].Dead != 0 {
		t.Errorf("[exactly once] ledger stats %+v, %v; want %d done (one row per forwarded event), none failed or dead",
			st, err, events)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for i := range events {
		if n := model.Count(t, s.DB(), forwardedKey(i)); n != 1 {
			t.Errorf("[exactly once] forwarded event %d applied %d times, want once", i, n)
		}
	}
	if seen.ids["forwarded-1"] {
		t.Errorf("[own id] the copied id forwarded-1 was read as an event id")
	}
	if len(seen.bad) > 0 {
		t.Errorf("[own type, original kept] %d events read wrong: %s", len(seen.bad), strings.Join(seen.bad, "; "))
	}
}
