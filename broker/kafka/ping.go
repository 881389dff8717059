package kafka

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald"
)

// Ping asks the cluster for its brokers: an error (unavailable) when none
// answers. It implements broker.Pinger.
func (p *Publisher) Ping(ctx context.Context) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrClosed
	}
	if err := p.client.Ping(ctx); err != nil {
		return herald.Unavailable(fmt.Errorf("kafka: ping %v: %w", p.cfg.Brokers, err))
	}
	return nil
}
