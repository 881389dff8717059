package memory

import (
	"sync"
	"time"

	"github.com/heraldhq/herald/broker"
)

// faults holds the fault settings. It has its own lock so that a hook may
// read the publisher's records without deadlocking.
type faults struct {
	mu      sync.Mutex
	downErr error
	nth     map[int]error // attempt number → error
	byEvent map[string]*eventFault
	hook    func(broker.Message) error
	ackWait time.Duration
}

type eventFault struct {
	left int
	err  error
}

func newFaults() faults {
	return faults{nth: map[int]error{}, byEvent: map[string]*eventFault{}}
}

// decide returns the error the fault settings give attempt n of m, or nil.
// The hook runs without the lock held.
func (f *faults) decide(n int, m broker.Message) error {
	f.mu.Lock()
	if err, ok := f.nth[n]; ok {
		delete(f.nth, n)
		f.mu.Unlock()
		return err
	}
	if ef := f.byEvent[m.Event.ID]; ef != nil && ef.left > 0 {
		ef.left--
		f.mu.Unlock()
		return ef.err
	}
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		return hook(m)
	}
	return nil
}

func (f *faults) down() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.downErr
}

func (f *faults) delay() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ackWait
}

// FailNth makes attempt n (1-based, counted across all Publish calls, see
// Attempts) fail with err. Wrap err with herald.Permanent for a permanent
// failure, or wrap ErrAckLost to store the message and lose its ack.
func (p *Publisher) FailNth(n int, err error) {
	p.faults.mu.Lock()
	defer p.faults.mu.Unlock()
	p.faults.nth[n] = err
}

// FailEvent makes the next times attempts of event id fail with err (same
// wrapping rules as FailNth). times <= 0 clears the fault.
func (p *Publisher) FailEvent(id string, times int, err error) {
	p.faults.mu.Lock()
	defer p.faults.mu.Unlock()
	if times <= 0 {
		delete(p.faults.byEvent, id)
		return
	}
	p.faults.byEvent[id] = &eventFault{left: times, err: err}
}

// LoseAck makes the next times attempts of event id be stored and still
// reported as ambiguous errors.
func (p *Publisher) LoseAck(id string, times int) {
	p.FailEvent(id, times, ErrAckLost)
}

// SetHook installs fn, called for every attempt that no other fault took;
// its error is the attempt's result (same wrapping rules as FailNth). nil
// removes the hook. fn may call the publisher's accessors.
func (p *Publisher) SetHook(fn func(m broker.Message) error) {
	p.faults.mu.Lock()
	defer p.faults.mu.Unlock()
	p.faults.hook = fn
}

// SetDown makes every attempt fail with err, not stored, until SetDown(nil):
// a broker outage.
func (p *Publisher) SetDown(err error) {
	p.faults.mu.Lock()
	defer p.faults.mu.Unlock()
	p.faults.downErr = err
}

// SetDelay makes every ack take d (zero: immediate). A message whose ack
// would come after ctx's end is stored and reported ambiguous.
func (p *Publisher) SetDelay(d time.Duration) {
	p.faults.mu.Lock()
	defer p.faults.mu.Unlock()
	p.faults.ackWait = d
}
