package verify

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/broker"
)

// natsReader reads the scratch stream with a continuous pull
// (jetstream.Consumer.Messages) rather than the projector subscriber's
// fetch-per-Receive: with several relays publishing, fetches held about
// 1 % of the messages back for one to two seconds (measured on MariaDB at
// 100 events/s: p99 1-2 s from commit to read back, while the rows were
// marked delivered within 50 ms), which the latency figures would have
// blamed on the relays.
type natsReader struct {
	it   jetstream.MessagesContext
	ch   chan jetstream.Msg
	done chan struct{}
}

func newNATSReader(ctx context.Context, js jetstream.JetStream, stream string) (*natsReader, error) {
	con, err := js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "herald_verify",
		AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy, MaxAckPending: 10000})
	if err != nil {
		return nil, fmt.Errorf("verify: consumer on %s: %w", stream, err)
	}
	it, err := con.Messages()
	if err != nil {
		return nil, err
	}
	r := &natsReader{it: it, ch: make(chan jetstream.Msg, 1024), done: make(chan struct{})}
	go func() {
		defer close(r.ch)
		for {
			m, err := it.Next()
			if err != nil {
				return // stopped (Close), or the iterator gave up
			}
			select {
			case r.ch <- m:
			case <-r.done:
				return
			}
		}
	}()
	return r, nil
}

// Receive returns the messages that arrived, waiting for the first.
func (r *natsReader) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	var out []broker.Received
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m, ok := <-r.ch:
		if !ok {
			return nil, fmt.Errorf("verify: the NATS read-back ended")
		}
		out = append(out, received(m))
	}
	for len(out) < most {
		select {
		case m, ok := <-r.ch:
			if !ok {
				return out, nil
			}
			out = append(out, received(m))
		default:
			return out, nil
		}
	}
	return out, nil
}

// received decodes the message's headers per the message contract
// (verify needs only the event id).
func received(m jetstream.Msg) broker.Received {
	h := make(map[string]string, len(m.Headers()))
	for k, vs := range m.Headers() {
		if len(vs) > 0 {
			h[k] = vs[0]
		}
	}
	return broker.Received{
		Event: broker.EventFromHeaders(h, "ce-", nil),
		Ack:   func(context.Context) error { return m.Ack() },
		Nack:  func(context.Context) error { return m.Nak() },
	}
}

// Close stops the pull.
func (r *natsReader) Close() error {
	close(r.done)
	r.it.Stop()
	return nil
}
