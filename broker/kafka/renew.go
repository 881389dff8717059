package kafka

import (
	"context"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/heraldhq/herald/broker"
)

// A producer that stopped producing is replaced.
//
// Seen with a three-broker cluster (kfake) under load: after a broker came
// back and partition leaders moved, one client's produces to some
// partitions went unanswered for minutes, every batch timing out at its
// deadline, while a fresh client produced at once. The relay's breaker
// then held the lane open and probed it with one event at a time, each
// probe timing out in the same client, so the lane never recovered. So
// after stallLimit publishes in a row in which no record got any answer
// (all timed out at the deadline), the publisher opens a new client (a new
// producer id) and closes the old one. Nothing is lost: the timed-out
// records were reported ambiguous and the relay publishes them again;
// consumers dedupe by ce_id, as across any two producer sessions.
const stallLimit = 3

// stalls counts consecutive publishes that got no answer at all.
type stalls struct {
	mu sync.Mutex
	n  int
}

// count records one publish's results and reports whether the client has
// now stalled stallLimit times in a row (and resets the count).
func (s *stalls) count(results []broker.Result) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !allTimedOut(results) {
		s.n = 0
		return false
	}
	if s.n++; s.n < stallLimit {
		return false
	}
	s.n = 0
	return true
}

// allTimedOut is true when results is not empty and every one of them is
// a timeout: no record was acknowledged or refused by a broker.
func allTimedOut(results []broker.Result) bool {
	for _, r := range results {
		if r.Err == nil || !errors.Is(r.Err, context.DeadlineExceeded) && !errors.Is(r.Err, kgo.ErrRecordTimeout) {
			return false
		}
	}
	return len(results) > 0
}

// renew swaps the client for a new one with the same options; on failure
// to create one the old one stays.
func (p *Publisher) renew() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	fresh, err := kgo.NewClient(p.opts...)
	if err != nil {
		p.mu.Unlock()
		return
	}
	old := p.client
	p.client = fresh
	p.mu.Unlock()
	old.Close()
}
