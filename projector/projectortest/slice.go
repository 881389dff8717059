package projectortest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// SliceSource is a broker.Subscriber that hands out its events once, then
// waits; it counts acks and nacks.
type SliceSource struct {
	mu          sync.Mutex
	msgs        []herald.Event
	Acks, Nacks atomic.Int32
	acked       chan string
}

// NewSliceSource returns a source of evs.
func NewSliceSource(evs ...herald.Event) *SliceSource {
	return &SliceSource{msgs: evs, acked: make(chan string, len(evs)+16)}
}

// Receive hands out up to most events not handed out yet, or waits for ctx.
func (s *SliceSource) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	s.mu.Lock()
	n := min(most, len(s.msgs))
	batch := s.msgs[:n]
	s.msgs = s.msgs[n:]
	s.mu.Unlock()
	if n == 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	out := make([]broker.Received, n)
	for i, ev := range batch {
		out[i] = broker.Received{Event: ev,
			Ack:  func(context.Context) error { s.Acks.Add(1); s.acked <- ev.ID; return nil },
			Nack: func(context.Context) error { s.Nacks.Add(1); return nil }}
	}
	return out, nil
}

// Close does nothing.
func (s *SliceSource) Close() error { return nil }

// WaitAcks waits up to 30s for n acks.
func (s *SliceSource) WaitAcks(t testing.TB, n int) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for range n {
		select {
		case <-s.acked:
		case <-timeout:
			t.Fatalf("[settle] fewer than %d acks after 30s", n)
		}
	}
}
