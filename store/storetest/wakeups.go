package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

var wakeupTests = []featureTest[store.Waker]{
	{"SignalOnCommit", testWakeupOnCommit},
}

// testWakeupOnCommit: Wakeups signals after a commit that enqueued into
// the table (from any connection: this one is the store's pool, the
// listener has its own), and closes its channel when its context ends.
func testWakeupOnCommit(t *testing.T, h *harness, w store.Waker) {
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	ch, err := w.Wakeups(ctx, h.table)
	if err != nil {
		t.Fatalf("[wakeups] Wakeups: %v", err)
	}
	h.enqueue(event("A"))
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("[a commit that enqueued wakes the listener] no signal within 10s")
	}
	cancel()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, open := <-ch:
			if !open {
				return
			}
		case <-deadline:
			t.Fatal("[the wakeup channel closes when its context ends] still open after 10s")
		}
	}
}
