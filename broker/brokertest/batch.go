package brokertest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/heraldhq/herald/broker"
)

func testBatch(t *testing.T, tg Target) {
	t.Run("one result per message in order", func(t *testing.T) {
		s := tg.New(t)
		dest := s.Destination("batch")
		msgs := make([]broker.Message, 7)
		for i := range msgs {
			msgs[i] = message(dest, fmt.Sprintf("k%d", i%3), i)
		}
		res := tg.publish(t, s, msgs)
		requireOK(t, "batch.accepted", res)
		got := s.Read(t, dest, len(msgs))
		ids := tg.byEventID(got)
		for i, m := range msgs {
			if len(ids[m.Event.ID]) != 1 {
				t.Errorf("[rule batch.result-matches-message] message %d (event %s) stored %d times, want once",
					i, m.Event.ID, len(ids[m.Event.ID]))
			}
		}
		if len(got) != len(msgs) {
			t.Errorf("[rule batch.stored] broker holds %d messages at %s, want %d", len(got), dest, len(msgs))
		}
	})
	t.Run("empty batch", func(t *testing.T) {
		s := tg.New(t)
		if res := s.Publisher.Publish(context.Background(), nil); len(res) != 0 {
			t.Errorf("[rule batch.empty] Publish(nil) returned %d results, want 0", len(res))
		}
	})
	t.Run("concurrent publish", func(t *testing.T) { testConcurrent(t, tg) })
}

// testConcurrent checks that Publish is safe for concurrent use: every
// message of every goroutine is stored once.
func testConcurrent(t *testing.T, tg Target) {
	s := tg.New(t)
	dest := s.Destination("concurrent")
	const workers, per = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*per)
	var ids sync.Map
	for w := range workers {
		wg.Go(func() {
			msgs := make([]broker.Message, per)
			for i := range msgs {
				msgs[i] = message(dest, fmt.Sprintf("w%d", w), i)
				ids.Store(msgs[i].Event.ID, true)
			}
			ctx, cancel := context.WithTimeout(context.Background(), tg.PublishTimeout)
			defer cancel()
			for i, r := range s.Publisher.Publish(ctx, msgs) {
				if r.Err != nil {
					errs <- fmt.Errorf("worker %d message %d: %w", w, i, r.Err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("[rule batch.concurrent] %v", err)
	}
	got := tg.byEventID(s.Read(t, dest, workers*per))
	n := 0
	ids.Range(func(k, _ any) bool {
		if len(got[k.(string)]) != 1 {
			t.Errorf("[rule batch.concurrent] event %s stored %d times, want once", k, len(got[k.(string)]))
		}
		n++
		return true
	})
	if n != workers*per {
		t.Fatalf("suite bug: %d ids", n)
	}
}
