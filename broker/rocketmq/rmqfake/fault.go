package rmqfake

import "sync"

// faults are the injected misbehaviours of SEND_MESSAGE(_V2).
type faults struct {
	mu      sync.Mutex
	cond    *sync.Cond
	codes   []int // answers for the next sends, in order
	drops   int   // next sends whose connection is closed unanswered
	stalled bool
}

// action is what one send does.
type action struct {
	code int
	drop bool
}

// next takes the next fault, waiting while stalled.
func (f *faults) next() action {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.stalled {
		f.cond.Wait()
	}
	if f.drops > 0 {
		f.drops--
		return action{drop: true}
	}
	if len(f.codes) > 0 {
		code := f.codes[0]
		f.codes = f.codes[1:]
		return action{code: code}
	}
	return action{}
}

func (f *faults) release() {
	f.mu.Lock()
	f.stalled = false
	f.mu.Unlock()
	f.cond.Broadcast()
}

// FailSends answers the next n sends with code (ResSystemBusy,
// ResFlushDiskTimeout, ...). Status codes the client reads as a send
// status (flush timeouts, slave not available) store the message as a
// real broker does; refusals store nothing.
func (c *Cluster) FailSends(code, n int) {
	c.fault.mu.Lock()
	defer c.fault.mu.Unlock()
	for range n {
		c.fault.codes = append(c.fault.codes, code)
	}
}

// DropSends closes the connection of the next n sends instead of answering.
func (c *Cluster) DropSends(n int) {
	c.fault.mu.Lock()
	defer c.fault.mu.Unlock()
	c.fault.drops += n
}

// Stall holds every send unanswered until Release (or Stop).
func (c *Cluster) Stall() {
	c.fault.mu.Lock()
	defer c.fault.mu.Unlock()
	c.fault.stalled = true
}

// Release lets stalled sends go on.
func (c *Cluster) Release() { c.fault.release() }
