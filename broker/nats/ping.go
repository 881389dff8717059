package nats

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald"
)

// Ping reports whether the server is there: connected, the stream checked
// (created when create_stream is on), and on a cluster the stream led by a
// replica (see streamDown). It implements broker.Pinger.
func (p *Publisher) Ping(ctx context.Context) error {
	err := p.usable(ctx)
	if err == nil {
		err = p.streamDown(ctx)
	}
	if err == nil || p.closed.Load() {
		return err
	}
	return herald.Unavailable(fmt.Errorf("nats: %w", err))
}
