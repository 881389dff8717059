// Package bench measures a relay on a real store and broker: throughput
// beside the store's own limit (a publisher that does nothing), commit →
// broker-ack latency at a steady rate, and the CPU an idle relay costs.
// `herald bench` and the benchmark docs use it.
package bench

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// Table is the outbox table benchmarks use; it is emptied before each run.
const Table = "herald_bench"

// Setup is what every measurement runs on.
type Setup struct {
	Store store.Store
	// Publisher is the real broker; nil measures with Nop.
	Publisher broker.Publisher
	// Destination renders the subject/topic of bench events (topic "bench").
	Destination broker.Template
	// Table defaults to Table.
	Table string
	// Source is the bench lane's (relay.SourcePoll by default). A log
	// lane's slot is made before the events are enqueued, so that the
	// drain reads them from the log (warmUpLog).
	Source relay.Source
	// OnDelivered is the bench lane's (relay.OnDeliveredMark by default;
	// delete on a log lane only).
	OnDelivered relay.OnDelivered
	// Messages writes the drained events as logical messages
	// (pg_logical_emit_message) instead of outbox rows: a PostgreSQL log
	// lane only.
	Messages bool
}

func (s Setup) table() string {
	if s.Table == "" {
		return Table
	}
	return s.Table
}

// Nop is a publisher that accepts everything at once: relaying to it
// measures the store's own limit (claim + mark).
type Nop struct{}

// Publish accepts every message.
func (Nop) Publish(_ context.Context, msgs []broker.Message) []broker.Result {
	return make([]broker.Result, len(msgs))
}

// Close does nothing.
func (Nop) Close() error { return nil }

// Delay is a publisher that accepts every message after waiting Wait per
// batch, using no CPU meanwhile: a broker on another host whose round trip
// is Wait. Beside Nop it tells what a real broker costs the relay in time
// (which the pipeline overlaps) from what it costs in CPU on a shared host.
type Delay struct{ Wait time.Duration }

// Publish waits, then accepts every message.
func (d Delay) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	t := time.NewTimer(d.Wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return make([]broker.Result, len(msgs))
}

// Close does nothing.
func (Delay) Close() error { return nil }

// prepare gives the run an empty bench table, dropped and created afresh:
// a reused queue table drags the dead index entries of earlier runs along
// until it is vacuumed.
func (s Setup) prepare(ctx context.Context) error {
	if err := s.Store.Drop(ctx, s.table()); err != nil {
		return err
	}
	return s.Store.Migrate(ctx, s.table())
}

// lane returns the bench lane for publisher p.
func (s Setup) lane(p broker.Publisher, batch, workers int) relay.Lane {
	return relay.Lane{Name: "bench", Table: s.table(), Publisher: p, Destination: s.Destination,
		BatchSize: batch, Concurrency: workers, PublishTimeout: 10 * time.Second, PollInterval: time.Second,
		Source: s.Source, OnDelivered: s.OnDelivered}
}

// startRelay runs a relay over lane until the returned stop is called.
func (s Setup) startRelay(lane relay.Lane, obs relay.Observer) (stop func(), err error) {
	r, err := relay.New(relay.Config{Store: s.Store, Lanes: []relay.Lane{lane}, Node: "bench",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Observer: obs})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	return func() { cancel(); <-done }, nil
}

// enqueue commits events in transactions of up to chunk events.
func (s Setup) enqueue(ctx context.Context, ob *herald.Outbox, evs []herald.Event, chunk int) error {
	for start := 0; start < len(evs); start += chunk {
		tx, err := s.Store.DB().BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := ob.Enqueue(ctx, tx, evs[start:min(len(evs), start+chunk)]...); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

func (s Setup) outbox() (*herald.Outbox, error) {
	return herald.NewOutbox(herald.OutboxConfig{Table: s.table(), Dialect: s.Store.Dialect(), MaxPayload: -1})
}

// payload returns n printable bytes.
func payload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = 'a' + byte(i%26)
	}
	return p
}

// deliveredCounter is an Observer that closes done once n rows were delivered.
type deliveredCounter struct {
	n     int64
	count atomic.Int64
	done  chan struct{}
	// Sums of the steps' durations and the number of batches, for the
	// per-batch breakdown.
	claim, publish, mark, batches atomic.Int64
}

func newDeliveredCounter(n int) *deliveredCounter {
	return &deliveredCounter{n: int64(n), done: make(chan struct{})}
}

func (c *deliveredCounter) BatchDone(s relay.BatchStats) {
	c.claim.Add(int64(s.Claim))
	c.publish.Add(int64(s.Publish))
	c.mark.Add(int64(s.Mark))
	c.batches.Add(1)
	// >=: a pass may deliver more than the count still missing.
	if n := c.count.Add(int64(s.Delivered)); n >= c.n && n-int64(s.Delivered) < c.n {
		close(c.done)
	}
}

// Median returns the median of xs (0 for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile returns the p-th percentile (0..100) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

// Steps is the mean time per batch of each step of the relay's loop.
type Steps struct {
	Batches              int64
	Claim, Publish, Mark time.Duration
}

func (c *deliveredCounter) steps() Steps {
	n := c.batches.Load()
	if n == 0 {
		return Steps{}
	}
	return Steps{Batches: n, Claim: time.Duration(c.claim.Load() / n),
		Publish: time.Duration(c.publish.Load() / n), Mark: time.Duration(c.mark.Load() / n)}
}
