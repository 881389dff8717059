package redis

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald"
)

// Ping sends PING: an error (unavailable) when the server does not answer
// PONG. It implements broker.Pinger.
func (p *Publisher) Ping(ctx context.Context) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if err := p.client.Ping(ctx).Err(); err != nil {
		return herald.Unavailable(fmt.Errorf("redis: ping: %w", err))
	}
	return nil
}
