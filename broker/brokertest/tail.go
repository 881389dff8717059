package brokertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/internal/testenv"
)

// TailFunc watches a broker destination from now on (a broker package's
// Tail, bound to a test's destination): it calls ready once it watches,
// fn per message, and returns nil when ctx ends.
type TailFunc func(ctx context.Context, ready func(), fn func(herald.Event)) error

// RunTail checks a Tail: a message published to dest before it starts is
// not shown, one published after is, decoded per the message contract, and
// Tail returns nil when its context ends.
func RunTail(t *testing.T, p broker.Publisher, dest string, tail TailFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	publish := func(id string) {
		t.Helper()
		ev := herald.Event{ID: id, Topic: "t", Type: "Gift", PartitionKey: "k", Payload: []byte(`{"n":1}`)}
		if r := p.Publish(ctx, []broker.Message{{Event: ev, Destination: dest, Attempt: 1}}); r[0].Err != nil {
			t.Fatalf("[tail] publish %s: %v", id, r[0].Err)
		}
	}
	publish("tail-before-" + herald.NewID())
	var mu sync.Mutex
	var seen []herald.Event
	ready, done := make(chan struct{}), make(chan error, 1)
	tailCtx, stop := context.WithCancel(ctx)
	go func() {
		done <- tail(tailCtx, func() { close(ready) }, func(ev herald.Event) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, ev)
		})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("[tail] Tail ended before it was ready: %v", err)
	}
	after := "tail-after-" + herald.NewID()
	publish(after)
	testenv.WaitFor(t, 20*time.Second, 10*time.Millisecond, "[tail] the new message shown", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) > 0
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("[tail] Tail returned %v when its context ended, want nil", err)
	}
	if len(seen) != 1 || seen[0].ID != after || seen[0].Type != "Gift" || seen[0].PartitionKey != "k" || string(seen[0].Payload) != `{"n":1}` {
		t.Fatalf("[tail shows only what arrives after it starts, decoded] got %+v, want only %s", seen, after)
	}
}

// MustPublish publishes evs to dest with p within 30s (attempt 1),
// failing tb on any error: for tests that feed a subscriber.
func MustPublish(tb testing.TB, p broker.Publisher, dest string, evs []herald.Event) {
	tb.Helper()
	msgs := make([]broker.Message, len(evs))
	for i, ev := range evs {
		msgs[i] = broker.Message{Event: ev, Destination: dest, Attempt: 1}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, r := range p.Publish(ctx, msgs) {
		if r.Err != nil {
			tb.Fatalf("publish %s to %s: %v", evs[i].ID, dest, r.Err)
		}
	}
}
