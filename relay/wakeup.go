package relay

import (
	"context"
	"sync"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// fanout turns the wakeup sources of one table (this process's enqueues and,
// where the store has them, database notifications) into one coalescing
// channel per worker.
type fanout struct {
	mu   sync.Mutex
	subs []chan struct{}
}

func (f *fanout) subscribe() <-chan struct{} {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	f.subs = append(f.subs, ch)
	f.mu.Unlock()
	return ch
}

func (f *fanout) broadcast() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs {
		select {
		case ch <- struct{}{}:
		default: // a wakeup is already pending: coalesce
		}
	}
}

// subscribeWakeups starts forwarding table's wakeup sources into a fanout
// until ctx ends or stop is called.
func subscribeWakeups(ctx context.Context, s store.Store, table string) (*fanout, func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	f := &fanout{}
	local, unsubscribe := herald.SubscribeWakeups(table)
	var remote <-chan struct{}
	if w, ok := s.(store.Waker); ok {
		ch, err := w.Wakeups(ctx, table)
		if err != nil {
			cancel()
			unsubscribe()
			return nil, nil, err
		}
		remote = ch
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-local:
			case _, ok := <-remote:
				if !ok {
					remote = nil // the store gave up; local wakeups and polling remain
					continue
				}
			}
			f.broadcast()
		}
	}()
	stop := func() {
		cancel()
		<-done
		unsubscribe()
	}
	return f, stop, nil
}
