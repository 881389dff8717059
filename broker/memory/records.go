package memory

import (
	"context"
	"fmt"
)

// Records returns a copy of every stored message, in the order stored.
func (p *Publisher) Records() []Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Record, len(p.records))
	copy(out, p.records)
	return out
}

// Destination returns the stored messages sent to dest, in order.
func (p *Publisher) Destination(dest string) []Record {
	var out []Record
	for _, r := range p.Records() {
		if r.Message.Destination == dest {
			out = append(out, r)
		}
	}
	return out
}

// Attempts returns how many messages were handed to Publish (stored,
// failed or refused), Close aside.
func (p *Publisher) Attempts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.attempts
}

// Distinct returns how many distinct event ids were stored.
func (p *Publisher) Distinct() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen)
}

// Count returns how many times event id was stored (more than once after a
// retry of an ambiguous failure).
func (p *Publisher) Count(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[id]
}

// Reset forgets every record and the attempt count; fault settings stay.
func (p *Publisher) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.records = nil
	p.seen = map[string]int{}
	p.attempts = 0
}

// WaitDistinct blocks until at least n distinct event ids were stored, or
// ctx ends; then it returns an error saying how many arrived.
func (p *Publisher) WaitDistinct(ctx context.Context, n int) error {
	for {
		p.mu.Lock()
		got, changed := len(p.seen), p.changed
		p.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("memory broker: %d of %d distinct events arrived: %w", got, n, ctx.Err())
		}
	}
}
