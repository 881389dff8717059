package nats

import (
	"context"
	"fmt"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald"
)

// TailConfig says which messages Tail shows.
type TailConfig struct {
	// Conn is how to reach the server (URL, credentials, TLS).
	Conn Config
	// Stream is the JetStream stream.
	Stream string
	// Subjects filter the stream's messages; empty shows them all.
	Subjects []string
}

// Tail calls fn for each message the stream stores from now on, until ctx
// ends, then returns nil. It reads through an ordered consumer of its own
// that starts at new messages, acks nothing and is gone when Tail returns:
// it changes nothing for other consumers. ready, if not nil, is called once
// the consumer exists.
func Tail(ctx context.Context, cfg TailConfig, ready func(), fn func(subject string, ev herald.Event)) error {
	conn := cfg.Conn.WithDefaults()
	nc, err := natsgo.Connect(conn.URL, connectOptions(conn)...)
	if err != nil {
		return fmt.Errorf("nats: connect to %s: %w", redact(conn.URL), err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("nats: jetstream: %w", err)
	}
	cons, err := js.OrderedConsumer(ctx, cfg.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: cfg.Subjects, DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		return fmt.Errorf("nats: tail %s: %w", cfg.Stream, err)
	}
	msgs, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("nats: tail %s: %w", cfg.Stream, err)
	}
	stop := context.AfterFunc(ctx, msgs.Stop)
	defer stop()
	if ready != nil {
		ready()
	}
	for {
		m, err := msgs.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("nats: tail %s: %w", cfg.Stream, err)
		}
		fn(m.Subject(), eventOf(m))
	}
}
