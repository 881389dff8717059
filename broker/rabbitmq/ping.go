package rabbitmq

import "context"

// Ping makes sure there is a live session (dialing one if the last
// dropped): an error (unavailable) when the broker cannot be reached. It
// implements broker.Pinger.
func (p *Publisher) Ping(ctx context.Context) error {
	_, err := p.session(ctx)
	return err
}
