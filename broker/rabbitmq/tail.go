package rabbitmq

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/heraldhq/herald"
)

// Tail calls fn for each message routed through exchange with a routing
// key matching pattern (a topic exchange's "*" and "#"; the exact key for a
// direct exchange) from now on, until ctx ends, then returns nil. It binds
// a server-named, exclusive, auto-deleted queue of its own, so the lane's
// queues lose nothing; ready, if not nil, is called once it is bound.
func Tail(ctx context.Context, url, exchange, pattern string, ready func(), fn func(routingKey string, ev herald.Event)) error {
	conn, err := amqp.DialConfig(url, amqp.Config{Properties: amqp.Table{"connection_name": "herald-tail"}})
	if err != nil {
		return fmt.Errorf("rabbitmq: tail: dial: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("rabbitmq: tail: channel: %w", err)
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err == nil {
		err = ch.QueueBind(q.Name, pattern, exchange, false, nil)
	}
	if err != nil {
		return fmt.Errorf("rabbitmq: tail %s %q: %w", exchange, pattern, err)
	}
	in, err := ch.ConsumeWithContext(ctx, q.Name, "herald-tail", true, true, false, false, nil)
	if err != nil {
		return fmt.Errorf("rabbitmq: tail: consume: %w", err)
	}
	if ready != nil {
		ready()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case d, ok := <-in:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("rabbitmq: tail: the broker closed the consumer")
			}
			fn(d.RoutingKey, deliveryEvent(d))
		}
	}
}
