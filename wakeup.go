package herald

import "sync"

// wakeups lets a relay in this process hear about events this process
// enqueues, so an idle relay reacts in milliseconds instead of a poll
// interval. It is process-wide by nature: Enqueue has only a transaction to
// go on, not a handle to the relay.
var wakeups = struct {
	sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}{subs: map[string]map[chan struct{}]struct{}{}}

// SubscribeWakeups returns a channel that receives (without blocking the
// sender, coalescing bursts) after every Enqueue into table in this process,
// and a function to stop. The signal comes before the caller commits, so a
// receiver should look again shortly if it finds nothing yet.
func SubscribeWakeups(table string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	wakeups.Lock()
	if wakeups.subs[table] == nil {
		wakeups.subs[table] = map[chan struct{}]struct{}{}
	}
	wakeups.subs[table][ch] = struct{}{}
	wakeups.Unlock()
	return ch, func() {
		wakeups.Lock()
		delete(wakeups.subs[table], ch)
		wakeups.Unlock()
	}
}

func signalWakeup(table string) {
	wakeups.Lock()
	defer wakeups.Unlock()
	for ch := range wakeups.subs[table] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
