package cli

import (
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
)

// wireTap is a core NATS subscriber beside a stream: it counts every
// message published on the stream's subjects by event id (ce-id), as it
// goes over the wire. The stream drops a republish within its dedupe
// window (Nats-Msg-Id), so only here does a message published twice show.
type wireTap struct {
	nc      *natsgo.Conn
	sub     *natsgo.Subscription
	mu      sync.Mutex
	seen    map[string]int
	handled int
}

// tapWire subscribes to subject (a wildcard such as "orders.>") on url
// before anything is published there, and closes when the test ends.
func tapWire(t *testing.T, url, subject string) *wireTap {
	t.Helper()
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w := &wireTap{nc: nc, seen: map[string]int{}}
	w.sub, err = nc.Subscribe(subject, func(m *natsgo.Msg) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.seen[m.Header.Get("ce-id")]++
		w.handled++
	})
	if err != nil {
		t.Fatal(err)
	}
	// No slow-consumer drops: every message must be counted.
	if err := w.sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil { // the subscription is in place
		t.Fatal(err)
	}
	return w
}

// counts returns how many times each event id went over the wire, once
// every message the server sent before now is counted: call it after the
// publishers stopped.
func (w *wireTap) counts(t *testing.T) map[string]int {
	t.Helper()
	if err := w.nc.Flush(); err != nil { // what the server sent is queued here
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the wire tap to count what it was sent", func() bool {
		n, _, _ := w.sub.Pending()
		delivered, _ := w.sub.Delivered()
		w.mu.Lock()
		defer w.mu.Unlock()
		return n == 0 && int64(w.handled) == delivered
	})
	if dropped, _ := w.sub.Dropped(); dropped != 0 {
		t.Fatalf("the wire tap dropped %d messages; its counts are incomplete", dropped)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.seen))
	for id, n := range w.seen {
		out[id] = n
	}
	return out
}

// checkWire fails unless the wire carried each of want distinct event ids
// and at most maxDups messages beyond one each; it returns the duplicates.
func checkWire(t *testing.T, w *wireTap, want, maxDups int) int {
	t.Helper()
	seen := w.counts(t)
	dups := 0
	var twice []string
	for id, n := range seen {
		if n > 1 {
			dups += n - 1
			twice = append(twice, id)
		}
	}
	if len(seen) != want {
		t.Errorf("the wire carried %d distinct events, want %d", len(seen), want)
	}
	if dups > maxDups {
		sort.Strings(twice)
		t.Errorf("%d messages went over the wire more than once (at most %d allowed), e.g. %s",
			dups, maxDups, strings.Join(twice[:min(5, len(twice))], ", "))
	}
	return dups
}
