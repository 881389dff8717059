package config

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// Tail watches what lane l's broker receives from now on, calling fn with
// each message's destination and event until ctx ends; it changes nothing
// for the broker's consumers. destination, when not empty, replaces what
// the lane's template covers (a subject or routing-key pattern, a stream
// or a topic). Tail describes what it watches to watching before it starts.
// The broker watches through broker.Tailer; one without it is refused.
func (f *File) Tail(ctx context.Context, l *Lane, destination string, watching func(what string),
	fn func(dest string, ev herald.Event)) error {
	b := f.Brokers[l.Broker]
	t, ok := b.Config.(broker.Tailer)
	if !ok {
		return fmt.Errorf("%w: herald tail cannot watch a %s broker (lane %s); it watches NATS, RabbitMQ, Redis, Kafka, Kinesis, Pub/Sub and MQTT", ErrInvalid, b.Type, l.Name)
	}
	err := t.Tail(ctx, broker.TailRequest{Template: l.Destination,
		Destination: destination, Watching: watching, Fn: fn})
	if errors.Is(err, broker.ErrTailDestination) {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return err
}
