package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// fakeLog is a store.LogReader and its one store.LogStream over fixed
// batches (batch i ends at position i+1). Record fails the test when the
// position it is given passes an event that is neither acknowledged by the
// broker nor handed over.
type fakeLog struct {
	t       testing.TB
	batches [][]store.Record
	acked   func(id string) bool
	// readCost and recordCost are how long Next (with a batch) and Record
	// (with a position) take.
	readCost, recordCost time.Duration
	// handOverErr, when set, is what every HandOver returns (writing
	// nothing): the database refusing the failed events' rows.
	handOverErr error

	mu         sync.Mutex
	next       int
	recorded   uint64
	handedOver map[string]store.LogFailure
}

func (f *fakeLog) CheckLog(context.Context) error                                    { return nil }
func (f *fakeLog) LogRequirements(context.Context) []string                          { return nil }
func (f *fakeLog) OpenLog(context.Context, store.LogParams) (store.LogStream, error) { return f, nil }
func (f *fakeLog) ApplyMarks(context.Context, string, string, int, bool) (store.MarksApplied, error) {
	return store.MarksApplied{}, nil
}
func (f *fakeLog) Strays(_ context.Context, _ string, _ store.Scope, p store.StrayProbe, _ int) (store.StrayProbe, []int64, error) {
	return p, nil, nil
}
func (f *fakeLog) Close() error { return nil }

func (f *fakeLog) HandOver(_ context.Context, _, _ string, fs []store.LogFailure) error {
	if f.handOverErr != nil {
		return f.handOverErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fl := range fs {
		f.handedOver[fl.Record.Event.ID] = fl
	}
	return nil
}

func (f *fakeLog) HandedOverKeys(context.Context, string, store.Scope, bool) ([][2]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys [][2]string
	for _, fl := range f.handedOver {
		keys = append(keys, [2]string{fl.Record.Event.Tenant, fl.Record.Event.PartitionKey})
	}
	return keys, nil
}

// ResetLog is not something a relay calls.
func (f *fakeLog) ResetLog(context.Context, string, bool) (store.LogReset, error) {
	return store.LogReset{}, errors.New("fakeLog: ResetLog is an operator's command")
}

func (f *fakeLog) Next(ctx context.Context, _ int, wait time.Duration) (store.LogBatch, error) {
	f.mu.Lock()
	i := f.next
	if i < len(f.batches) {
		f.next++
		f.mu.Unlock()
		time.Sleep(f.readCost)
		return store.LogBatch{Records: f.batches[i], End: uint64(i + 1)}, nil
	}
	f.mu.Unlock()
	select {
	case <-ctx.Done():
		return store.LogBatch{}, ctx.Err()
	case <-time.After(wait):
		return store.LogBatch{End: uint64(len(f.batches))}, nil
	}
}

func (f *fakeLog) Record(_ context.Context, end uint64, _ []store.Delivery) error {
	if end > 0 {
		time.Sleep(f.recordCost)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := 0; i < int(end) && i < len(f.batches); i++ {
		for _, rec := range f.batches[i] {
			if _, ok := f.handedOver[rec.Event.ID]; !ok && !f.acked(rec.Event.ID) {
				f.t.Errorf("position %d recorded past batch %d's event %s, neither acknowledged nor handed over", end, i+1, rec.Event.ID)
			}
		}
	}
	f.recorded = max(f.recorded, end)
	return nil
}

func (f *fakeLog) position() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.recorded
}

func (f *fakeLog) handedOverEvent(id string) (store.LogFailure, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl, ok := f.handedOver[id]
	return fl, ok
}

// gatedBroker acks every message at once, except that a message whose id
// is in hold waits until its release event is acknowledged (at most a
// few seconds) and then fails.
type gatedBroker struct {
	hold map[string]string // held id → the id that releases it
	mu   sync.Mutex
	ack  map[string]time.Time
	fail map[string]time.Time
	sent []string
}

func newGatedBroker(hold map[string]string) *gatedBroker {
	return &gatedBroker{hold: hold, ack: map[string]time.Time{}, fail: map[string]time.Time{}}
}

func (g *gatedBroker) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	res := make([]broker.Result, len(msgs))
	for i, m := range msgs {
		id := m.Event.ID
		g.mu.Lock()
		g.sent = append(g.sent, id)
		g.mu.Unlock()
		if rel, ok := g.hold[id]; ok {
			for deadline := time.Now().Add(3 * time.Second); !g.acked(rel) && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			g.mu.Lock()
			g.fail[id] = time.Now()
			g.mu.Unlock()
			res[i].Err = errors.New("nack")
			continue
		}
		g.mu.Lock()
		g.ack[id] = time.Now()
		g.mu.Unlock()
	}
	return res
}

func (g *gatedBroker) Close() error { return nil }

func (g *gatedBroker) acked(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.ack[id]
	return ok
}

func (g *gatedBroker) times(id string) (ack, fail time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ack[id], g.fail[id]
}

func (g *gatedBroker) published(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.sent {
		if s == id {
			return true
		}
	}
	return false
}

// logBatches makes batches of records: each spec is "key:id key:id …"
// (an empty key: "-:id").
func logBatches(specs ...string) [][]store.Record {
	var out [][]store.Record
	var row int64
	for _, spec := range specs {
		var recs []store.Record
		for _, f := range strings.Fields(spec) {
			key, id, _ := strings.Cut(f, ":")
			if key == "-" {
				key = ""
			}
			row++
			recs = append(recs, store.Record{ID: row, Event: herald.Event{ID: id, Topic: "t", Type: "Happened", PartitionKey: key}})
		}
		out = append(out, recs)
	}
	return out
}

// runLogReader runs a log reader over f with pub until every batch is
// recorded (or the test times out).
func runLogReader(t testing.TB, f *fakeLog, pub broker.Publisher, mod func(*Lane)) {
	t.Helper()
	r := newTestLogReader(f, pub, mod)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.relay(ctx, f) }()
	defer func() { cancel(); <-done }()
	testenv.WaitFor(t, time.Minute, time.Millisecond, "every batch recorded", func() bool { return f.position() == uint64(len(f.batches)) })
}

// newTestLogReader is a log reader of a fast lane over f, publishing to pub.
func newTestLogReader(f *fakeLog, pub broker.Publisher, mod func(*Lane)) *logReader {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := Config{Node: "test", Logger: log}.withDefaults()
	lane := Lane{Name: "test", Table: "t", Publisher: pub, Destination: broker.MustParseTemplate("t.{event_type}"),
		Source: SourceLog, PollInterval: 20 * time.Millisecond, PublishTimeout: 5 * time.Second,
		Retry: Retry{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, MaxAttempts: 5}}
	mod(&lane)
	w := newWorker(cfg, lane.WithDefaults(), "test/test-log", nil, log)
	w.breaker, w.paused = newBreaker("test", log, 10*time.Millisecond, 50*time.Millisecond), new(atomic.Bool)
	f.handedOver = map[string]store.LogFailure{}
	return newLogReader(f, w)
}

// Rule: a log lane publishes consecutive batches at once, but records a
// position only up to where every earlier event is acknowledged or handed
// over: here the broker acks batch 2 while batch 1 waits, then fails batch
// 1, which is handed over before the position passes it.
func TestLogLaneRecordsOnlyPastSettledBatches(t *testing.T) {
	pub := newGatedBroker(map[string]string{"b1-0": "b2-0", "b1-1": "b2-0"})
	f := &fakeLog{t: t, batches: logBatches("-:b1-0 -:b1-1", "-:b2-0 -:b2-1", "-:b3-0")}
	f.acked = pub.acked
	runLogReader(t, f, pub, func(l *Lane) { l.Concurrency = 2 })
	ack2, _ := pub.times("b2-0")
	_, fail1 := pub.times("b1-0")
	if ack2.IsZero() || fail1.IsZero() || !ack2.Before(fail1) {
		t.Fatalf("batch 2 acked at %v, batch 1 failed at %v: want batch 2 published while batch 1 waited", ack2, fail1)
	}
	for _, id := range []string{"b1-0", "b1-1"} {
		if fl, ok := f.handedOverEvent(id); !ok || !fl.Attempted || fl.Error == "" {
			t.Errorf("%s handed over as %+v (%v), want a failed attempt", id, fl, ok)
		}
	}
}

// Rule: when a failed event cannot be handed over (the database refuses
// its row), the log lane records no position from its batch on: not even
// that of batch 2, acknowledged while batch 1 waited, which would pass
// batch 1's event, neither acknowledged nor handed over (fakeLog.Record
// fails the test then). The stream stops with the hand-over's error.
func TestLogLaneRecordsNothingAfterAFailedHandOver(t *testing.T) {
	pub := newGatedBroker(map[string]string{"b1-0": "b2-0"})
	f := &fakeLog{t: t, batches: logBatches("-:b1-0", "-:b2-0", "-:b3-0"), handOverErr: errors.New("database refused")}
	f.acked = pub.acked
	r := newTestLogReader(f, pub, func(l *Lane) { l.Concurrency = 2 })
	var err error
	if waitCtx(t, time.Minute, func(ctx context.Context) error { err = r.relay(ctx, f); return ctx.Err() }) != nil {
		t.Fatal("the log reader went on after its hand-over failed; it must stop")
	}
	if err == nil || !strings.Contains(err.Error(), "handing over 1 failed events: database refused") {
		t.Fatalf("relay ended with %v, want the hand-over's error", err)
	}
	if !pub.acked("b2-0") {
		t.Fatal("b2-0 was not acknowledged while b1-0 waited: the test proves nothing")
	}
	if pos := f.position(); pos != 0 {
		t.Fatalf("position %d recorded after batch 1's hand-over failed, want none", pos)
	}
}

// Rule: on an ordered lane a batch waits for earlier batches being
// published that share one of its keys (their failures park the key: its
// later events are handed over unpublished), and not for the others.
func TestLogLaneKeepsKeyOrderAcrossBatches(t *testing.T) {
	pub := newGatedBroker(map[string]string{"a0": "y0"})
	f := &fakeLog{t: t, batches: logBatches("k1:a0 k2:x0", "k3:y0", "k1:a1 k4:z0")}
	f.acked = pub.acked
	runLogReader(t, f, pub, func(l *Lane) { l.Concurrency, l.Ordering = 3, OrderingKey })
	ack, _ := pub.times("y0")
	if _, fail := pub.times("a0"); ack.IsZero() || fail.IsZero() || !ack.Before(fail) {
		t.Fatalf("y0 acked at %v, a0 failed at %v: want the batch without a shared key published meanwhile", ack, fail)
	}
	if pub.published("a1") {
		t.Fatal("a1 was published: it must wait behind a0 of its key, which failed")
	}
	if fl, ok := f.handedOverEvent("a1"); !ok || fl.Attempted {
		t.Fatalf("a1 handed over as %+v (%v), want unpublished behind a0", fl, ok)
	}
	if !pub.acked("z0") {
		t.Fatal("z0 (a key of its own) was not delivered")
	}
}

// slowBroker acks every batch after wait, using no CPU (a broker on
// another host).
type slowBroker struct{ wait time.Duration }

func (s slowBroker) Publish(_ context.Context, msgs []broker.Message) []broker.Result {
	time.Sleep(s.wait)
	return make([]broker.Result, len(msgs))
}

func (slowBroker) Close() error { return nil }

// BenchmarkLogLaneStages drains 50 batches of 1,000 events through a log
// lane whose read, publish and record cost what they cost per batch of
// 1,000 on PostgreSQL and NATS (docs/benchmarks.md: ~34, ~39 and ~35 ms),
// as waits, so that the figure shows the pipeline's shape, not the
// machine's load: with one batch out the publish is the ceiling.
func BenchmarkLogLaneStages(b *testing.B) {
	const batches, size = 50, 1000
	specs := make([]string, batches)
	for i := range specs {
		ids := make([]string, size)
		for j := range ids {
			ids[j] = fmt.Sprintf("-:e%d-%d", i, j)
		}
		specs[i] = strings.Join(ids, " ")
	}
	recs := logBatches(specs...)
	for _, inFlight := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("in_flight=%d", inFlight), func(b *testing.B) {
			for b.Loop() {
				f := &fakeLog{t: b, batches: recs, acked: func(string) bool { return true },
					readCost: 34 * time.Millisecond, recordCost: 35 * time.Millisecond}
				start := time.Now()
				runLogReader(b, f, slowBroker{wait: 39 * time.Millisecond}, func(l *Lane) { l.Concurrency = inFlight })
				b.ReportMetric(float64(batches*size)/time.Since(start).Seconds(), "events/s")
			}
		})
	}
}
