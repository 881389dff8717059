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
	"github.com/heraldhq/herald/projector"
)

// SourceConfig describes a broker.Subscriber under test.
type SourceConfig struct {
	// Subscribe returns a new subscriber on the test's subscription (a
	// durable consumer, a group); it is called once per projector process.
	Subscribe func(tb testing.TB) broker.Subscriber
	// SubscribeIn, used instead of Subscribe when set, is for subscribers
	// that keep their positions in the projection's database (Kinesis):
	// it gets the process's own store (a pool of that database).
	SubscribeIn func(tb testing.TB, s Store) broker.Subscriber
	// Publish sends events to the subscription's stream or topic.
	Publish func(tb testing.TB, evs []herald.Event)
	// Events is how many events to send. Defaults to 10,000 (2,000 under
	// the race detector, which slows the pure-Go SQLite driver tenfold).
	Events int
	// Keys is how many partition keys they spread over. Defaults to 50.
	Keys int
	// Processes is how many projectors consume at once. Defaults to 2.
	Processes int
	// KeyOrder declares that the source delivers one key's events in
	// publish order to one consumer; the suite checks it.
	KeyOrder bool
	// Within bounds the whole projection. Defaults to 2 minutes.
	Within time.Duration
}

func (c SourceConfig) withDefaults() SourceConfig {
	if c.Events <= 0 {
		c.Events = 10_000
		if raceEnabled {
			c.Events = 2_000
		}
	}
	if c.Keys <= 0 {
		c.Keys = 50
	}
	if c.Processes <= 0 {
		c.Processes = 2
	}
	if c.Within <= 0 {
		c.Within = 2 * time.Minute
	}
	return c
}

// RunSource projects cfg.Events events, published through cfg.Publish, into
// a counting read model on SQLite with cfg.Processes projectors, each on its
// own subscriber and pool, and checks that the totals equal the events sent
// (every event applied exactly once) and that no event failed.
func RunSource(t *testing.T, cfg SourceConfig) {
	cfg = cfg.withDefaults()
	path := filepath.Join(t.TempDir(), "source.db")
	open := SQLite(path)
	s := open(t)
	model := NewModel(t, s)
	table := Name("herald_pe")
	if err := s.MigrateProjections(context.Background(), table); err != nil {
		t.Fatal(err)
	}
	order := &orderCheck{last: map[string]int64{}}
	handler := func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
		if cfg.KeyOrder {
			order.see(ev)
		}
		return model.Bump(ctx, tx, ev)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for i := range cfg.Processes {
		st := open(t)
		p, err := projector.New(projector.Config{
			Settings: projector.Settings{Name: "count", Table: table, Workers: 4, BatchSize: 256,
				Backoff: projector.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}},
			Store: st, Handler: handler, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		var sub broker.Subscriber
		if cfg.SubscribeIn != nil {
			sub = cfg.SubscribeIn(t, st)
		} else {
			sub = cfg.Subscribe(t)
		}
		t.Cleanup(func() { _ = sub.Close() })
		wg.Go(func() {
			if err := p.Run(ctx, sub); err != nil {
				t.Errorf("projector %d: %v", i, err)
			}
		})
	}
	sent := publishAll(t, cfg)
	start := time.Now()
	Eventually(t, cfg.Within, fmt.Sprintf("[totals] read model total reaches %d", cfg.Events), func() bool {
		return model.Total(t, s.DB()) >= int64(cfg.Events)
	})
	t.Logf("projected %d events in %v after publishing", cfg.Events, time.Since(start))
	cancel()
	wg.Wait()
	if got := model.Total(t, s.DB()); got != int64(cfg.Events) {
		t.Errorf("[exactly once] read model total %d, want %d", got, cfg.Events)
	}
	for key, n := range sent {
		if got := model.Count(t, s.DB(), key); got != n {
			t.Errorf("[exactly once] key %s counted %d, want %d", key, got, n)
		}
	}
	st, err := s.ProjectionStats(context.Background(), table, "count")
	if err != nil || len(st) != 1 || st[0].Done != int64(cfg.Events) || st[0].Failed+st[0].Dead != 0 {
		t.Errorf("[bookkeeping] stats %+v, %v; want %d done, none failed or dead", st, err, cfg.Events)
	}
	if v := order.violations(); v != "" {
		t.Errorf("[key order] %s", v)
	}
}

// publishAll sends the events in chunks of 500, key by key round robin, and
// returns how many went to each key.
func publishAll(t *testing.T, cfg SourceConfig) map[string]int64 {
	sent := map[string]int64{}
	var chunk []herald.Event
	for i := range cfg.Events {
		key := fmt.Sprintf("k%03d", i%cfg.Keys)
		sent[key]++
		chunk = append(chunk, Event(key, sent[key]))
		if len(chunk) == 500 || i == cfg.Events-1 {
			cfg.Publish(t, chunk)
			chunk = nil
		}
	}
	return sent
}

// orderCheck records events of one key applied out of publish order.
type orderCheck struct {
	mu   sync.Mutex
	last map[string]int64
	bad  []string
}

func (o *orderCheck) see(ev herald.Event) {
	var p Payload
	if json.Unmarshal(ev.Payload, &p) != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	// A rerun after a rollback repeats a sequence number; going back is
	// the violation.
	if p.Seq < o.last[p.Key] && len(o.bad) < 5 {
		o.bad = append(o.bad, fmt.Sprintf("key %s: seq %d after %d", p.Key, p.Seq, o.last[p.Key]))
	}
	o.last[p.Key] = max(o.last[p.Key], p.Seq)
}

func (o *orderCheck) violations() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.bad, "; ")
}
