package relay

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

// writeCounter is a store.LogStream whose Record keeps each position it
// was given.
type writeCounter struct {
	mu     sync.Mutex
	writes []uint64
}

func (c *writeCounter) Next(ctx context.Context, _ int, _ time.Duration) (store.LogBatch, error) {
	<-ctx.Done()
	return store.LogBatch{}, ctx.Err()
}

func (c *writeCounter) Record(_ context.Context, end uint64, _ []store.Delivery) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, end)
	return nil
}

func (c *writeCounter) Close() error { return nil }

// sendEvery sends n requests of events events each, every gap, to a new
// recorder over c, and returns how long that took once every write is done.
func sendEvery(t *testing.T, c *writeCounter, n, events int, gap time.Duration) time.Duration {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := newWorker(Config{Node: "test", Logger: log}.withDefaults(), Lane{Name: "test", Table: "t"}.WithDefaults(), "test/test-log", nil, log)
	ctx := context.Background()
	rc := startRecorder(ctx, func(error) {}, c, w, make(chan struct{}, 1))
	start := time.Now()
	for i := 1; i <= n; i++ {
		rc.send(ctx, recordReq{end: uint64(i), stats: BatchStats{Lane: "test", Claimed: events}})
		time.Sleep(gap)
	}
	rc.close()
	if got := c.writes[len(c.writes)-1]; got != uint64(n) {
		t.Fatalf("last position written %d, want %d", got, n)
	}
	return time.Since(start)
}

// Rule: a recorder whose writes carry few events writes at most once per
// recordGap, gathering the batches settled meanwhile; one whose writes are
// large writes each batch as soon as it is settled.
func TestRecorderGathersSmallWrites(t *testing.T) {
	small := &writeCounter{}
	took := sendEvery(t, small, 30, 1, time.Millisecond)
	if most := int(took/recordGap) + 2; len(small.writes) > most {
		t.Fatalf("30 batches of one event over %v took %d writes, want at most %d (one per %v)", took, len(small.writes), most, recordGap)
	}
	large := &writeCounter{}
	sendEvery(t, large, 5, recordGapBelow, 2*time.Millisecond)
	if len(large.writes) < 4 {
		t.Fatalf("5 batches of %d events 2 ms apart took %d writes, want one each (a delayed one may join the next)", recordGapBelow, len(large.writes))
	}
}
