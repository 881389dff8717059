package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/internal/sleep"
)

// LatencyParams shapes a latency measurement.
type LatencyParams struct {
	Rate     int           // events per second
	Duration time.Duration // how long the producer runs
	// Producer, when set, produces in another process: it must enqueue
	// into the bench table at Rate, call committed with each event's id
	// and the moment its commit returned, and return when done. Nil
	// produces in this process.
	Producer func(ctx context.Context, committed func(id string, at time.Time)) error
}

// LatencyResult is commit → broker-ack latency over every event.
type LatencyResult struct {
	Events   int
	P50, P99 time.Duration
	Max      time.Duration
	// RelayCPU is the CPU this process used per second of wall time while
	// relaying (a fraction of one core), the producer included when it runs
	// in this process.
	RelayCPU float64
}

// ackClock wraps a publisher and records when each event was first
// acknowledged by the broker.
type ackClock struct {
	broker.Publisher
	mu    sync.Mutex
	acked map[string]time.Time
}

func (a *ackClock) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	res := a.Publisher.Publish(ctx, msgs)
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, r := range res {
		if _, seen := a.acked[msgs[i].Event.ID]; r.Err == nil && !seen {
			a.acked[msgs[i].Event.ID] = now
		}
	}
	return res
}

// commits collects the moments producers' commits returned.
type commits struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (c *commits) add(id string, at time.Time) {
	c.mu.Lock()
	c.at[id] = at
	c.mu.Unlock()
}

// Latency runs a relay with default settings while events are produced at
// a steady rate, one per transaction, and reports percentiles of the time
// from the producer's commit returning to the broker's ack reaching the
// relay. Both clocks are this machine's.
func Latency(ctx context.Context, s Setup, p LatencyParams) (LatencyResult, error) {
	if err := s.prepare(ctx); err != nil {
		return LatencyResult{}, err
	}
	pub := s.Publisher
	if pub == nil {
		pub = Nop{}
	}
	if err := s.readyLog(ctx, pub); err != nil {
		return LatencyResult{}, err
	}
	clock := &ackClock{Publisher: pub, acked: map[string]time.Time{}}
	committed := &commits{at: map[string]time.Time{}}
	lane := s.lane(clock, 100, 1)
	lane.PublishTimeout = 3 * time.Second // the default configuration
	stop, err := s.startRelay(lane, nil)
	if err != nil {
		return LatencyResult{}, err
	}
	cpu0, wall0 := cpuTime(), time.Now()
	produce := p.Producer
	if produce == nil {
		produce = func(ctx context.Context, done func(string, time.Time)) error {
			return Produce(ctx, s, p.Rate, p.Duration, done)
		}
	}
	err = produce(ctx, committed.add)
	time.Sleep(200 * time.Millisecond) // let the last events arrive
	cpu := (cpuTime() - cpu0).Seconds() / time.Since(wall0).Seconds()
	stop()
	if err != nil {
		return LatencyResult{}, fmt.Errorf("producer: %w", err)
	}
	clock.mu.Lock()
	var lats []time.Duration
	for id, at := range committed.at {
		if ack, ok := clock.acked[id]; ok {
			lats = append(lats, ack.Sub(at))
		}
	}
	clock.mu.Unlock()
	slices.Sort(lats)
	return LatencyResult{Events: len(lats), P50: percentile(lats, 50), P99: percentile(lats, 99),
		Max: percentile(lats, 100), RelayCPU: cpu}, nil
}

// producers is how many transactions Produce may have open at once: an
// application has many threads committing independently, and one slow
// commit must not hold back the next events' schedule.
const producers = 8

// Produce enqueues one event per transaction at rate per second for d, on
// schedule (open loop: event i starts at i/rate, whatever earlier commits
// took), and calls committed with each event's id when its commit has
// returned, one call at a time. The first error stops it.
func Produce(ctx context.Context, s Setup, rate int, d time.Duration, committed func(id string, at time.Time)) error {
	ob, err := s.outbox()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	slots := make(chan struct{}, producers)
	var wg sync.WaitGroup
	var mu sync.Mutex // serializes committed
	body := payload(256)
	interval := time.Second / time.Duration(rate)
	start := time.Now()
schedule:
	for i := 0; time.Duration(i)*interval < d; i++ {
		if !sleep.Until(ctx, start.Add(time.Duration(i)*interval)) {
			break
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			break schedule
		}
		wg.Go(func() {
			defer func() { <-slots }()
			ev := herald.Event{ID: herald.NewID(), Topic: "bench", Type: "Latency", Payload: body}
			if err := s.enqueue(ctx, ob, []herald.Event{ev}, 1); err != nil {
				cancel(err)
				return
			}
			at := time.Now()
			mu.Lock()
			committed(ev.ID, at)
			mu.Unlock()
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// IdleCPU runs a relay with nothing to do for d and returns the CPU it
// used, as a fraction of one core.
func IdleCPU(ctx context.Context, s Setup, d time.Duration) (float64, error) {
	if err := s.prepare(ctx); err != nil {
		return 0, err
	}
	if err := s.readyLog(ctx, Nop{}); err != nil {
		return 0, err
	}
	stop, err := s.startRelay(s.lane(Nop{}, 100, 1), nil)
	if err != nil {
		return 0, err
	}
	time.Sleep(200 * time.Millisecond) // the first pass and connection setup are not idle
	cpu0, wall0 := cpuTime(), time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	cpu := (cpuTime() - cpu0).Seconds() / time.Since(wall0).Seconds()
	stop()
	return cpu, ctx.Err()
}

// readyLog, for a log lane, makes its slot before a measurement starts
// (warmUpLog), so that the measured events are read from the log.
func (s Setup) readyLog(ctx context.Context, pub broker.Publisher) error {
	ob, err := s.outbox()
	if err != nil {
		return err
	}
	return s.warmUpLog(ctx, ob, pub, ThroughputParams{Batch: 100, Workers: 1})
}

// cpuTime is this process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
