package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/heraldhq/herald"
)

// KeepUpParams shapes a keep-up measurement: producers committing as fast
// as the database takes them while the relay runs.
type KeepUpParams struct {
	Events    int // events in all, shared between the producers
	Producers int // concurrent producers
	TxSize    int // events per producer transaction
	Batch     int // relay batch_size
	Workers   int // relay concurrency
	Payload   int // payload bytes
}

// KeepUpResult says whether the relay keeps up with producers that commit
// as fast as they can.
type KeepUpResult struct {
	Params KeepUpParams
	// InsertAlone is the events/s the producers commit with no relay
	// running: what the database accepts.
	InsertAlone float64
	// InsertWithRelay is the events/s they commit while the relay runs.
	InsertWithRelay float64
	// Relay is the events/s the relay delivered while the producers ran.
	Relay float64
	// Backlog is how many committed events were not yet delivered when the
	// producers finished, and CatchUp how long the relay then took to
	// deliver them.
	Backlog int64
	CatchUp time.Duration
}

// KeepUp measures the producers alone, then the producers and the relay
// together, each on an empty table. The relay keeps up when Relay is about
// InsertWithRelay and the backlog at the end is a batch or two.
func KeepUp(ctx context.Context, s Setup, p KeepUpParams) (KeepUpResult, error) {
	res := KeepUpResult{Params: p}
	if err := s.prepare(ctx); err != nil {
		return res, err
	}
	took, err := s.produce(ctx, p)
	if err != nil {
		return res, err
	}
	res.InsertAlone = float64(p.Events) / took.Seconds()
	if err := s.prepare(ctx); err != nil {
		return res, err
	}
	ob, err := s.outbox()
	if err != nil {
		return res, err
	}
	if err := s.warmUpLog(ctx, ob, s.Publisher, ThroughputParams{Batch: p.Batch, Workers: p.Workers}); err != nil {
		return res, err
	}
	counter := newDeliveredCounter(p.Events)
	stop, err := s.startRelay(s.lane(s.Publisher, p.Batch, p.Workers), counter)
	if err != nil {
		return res, err
	}
	defer stop()
	start := time.Now()
	took, err = s.produce(ctx, p)
	if err != nil {
		return res, err
	}
	delivered := counter.count.Load()
	res.InsertWithRelay = float64(p.Events) / took.Seconds()
	res.Relay = float64(delivered) / took.Seconds()
	res.Backlog = int64(p.Events) - delivered
	select {
	case <-counter.done:
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(10 * time.Minute):
		return res, fmt.Errorf("relay delivered %d of %d events in 10 minutes", counter.count.Load(), p.Events)
	}
	res.CatchUp = time.Since(start) - took
	return res, nil
}

// produce commits p.Events events from p.Producers goroutines in
// transactions of p.TxSize, as fast as the database takes them, and
// returns how long that took.
func (s Setup) produce(ctx context.Context, p KeepUpParams) (time.Duration, error) {
	ob, err := s.outbox()
	if err != nil {
		return 0, err
	}
	body := payload(p.Payload)
	var wg sync.WaitGroup
	errs := make(chan error, p.Producers)
	start := time.Now()
	for i := range p.Producers {
		n := p.Events / p.Producers
		if i < p.Events%p.Producers {
			n++
		}
		wg.Go(func() {
			evs := make([]herald.Event, n)
			for j := range evs {
				evs[j] = herald.Event{Topic: "bench", Type: "Bench", Payload: body}
			}
			if err := s.enqueue(ctx, ob, evs, p.TxSize); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, fmt.Errorf("produce: %w", err)
	}
	return took, nil
}
