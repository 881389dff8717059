package config

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/kafka"
	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/rabbitmq"
	"github.com/heraldhq/herald/broker/redis"
)

// Tail watches what lane l's broker receives from now on, calling fn with
// each message's destination and event until ctx ends; it changes nothing
// for the broker's consumers. destination, when not empty, replaces what
// the lane's template covers (a subject or routing-key pattern, a stream
// or a topic). Tail describes what it watches to watching before it starts.
func (f *File) Tail(ctx context.Context, l *Lane, destination string, watching func(what string),
	fn func(dest string, ev herald.Event)) error {
	b := f.Brokers[l.Broker]
	tpl := broker.MustParseTemplate(l.Destination) // validated at load
	ready := func(what string) func() { return func() { watching(what) } }
	switch {
	case b.NATS != nil:
		cfg, what := natsTail(b.NATS, tpl, destination)
		return nats.Tail(ctx, cfg, ready(what), fn)
	case b.RabbitMQ != nil:
		c := b.RabbitMQ.WithDefaults()
		pattern := destination
		if pattern == "" {
			pattern = patternOr(tpl, "#")
		}
		return rabbitmq.Tail(ctx, c.URL, c.Exchange, pattern, ready(fmt.Sprintf("exchange %s, routing keys %q", c.Exchange, pattern)), fn)
	case b.Redis != nil:
		c := b.Redis.WithDefaults()
		key, err := concrete(tpl, destination, "stream")
		if err != nil {
			return err
		}
		return redis.Tail(ctx, c.URL, key, c.BodyField, ready("Redis stream "+key), fn)
	case b.Kafka != nil:
		topic, err := concrete(tpl, destination, "topic")
		if err != nil {
			return err
		}
		return kafka.Tail(ctx, kafka.TailConfig{Conn: b.Kafka.Config, Topics: []string{topic}}, ready("Kafka topic "+topic), fn)
	}
	return fmt.Errorf("%w: herald tail watches NATS, RabbitMQ, Redis and Kafka brokers, not %s (lane %s)", ErrInvalid, b.Type, l.Name)
}

// natsTail is what to watch on a NATS broker: the lane's subjects, or the
// whole stream when a placeholder shares a token with other text.
func natsTail(c *NATSBroker, tpl broker.Template, destination string) (nats.TailConfig, string) {
	url := c.URL
	if e := c.Embedded; e != nil {
		url = "nats://" + net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
	}
	cfg := nats.TailConfig{Conn: nats.Config{URL: url, CredsFile: c.CredsFile}, Stream: c.Stream}
	subject := destination
	if subject == "" {
		subject = patternOr(tpl, "")
	}
	if subject == "" {
		return cfg, "NATS stream " + c.Stream
	}
	cfg.Subjects = []string{subject}
	return cfg, fmt.Sprintf("NATS stream %s, subjects %s", c.Stream, subject)
}

// patternOr is the template with placeholders as "*", or fallback when a
// placeholder shares a token.
func patternOr(tpl broker.Template, fallback string) string {
	if p, ok := tpl.Pattern("*"); ok {
		return p
	}
	return fallback
}

// concrete is the one stream or topic a lane publishes to, for brokers
// that cannot subscribe by pattern here.
func concrete(tpl broker.Template, destination, what string) (string, error) {
	if destination != "" {
		return destination, nil
	}
	if tpl.HasPlaceholders() {
		return "", fmt.Errorf("%w: the lane's destination depends on each event; name the %s with --destination", ErrInvalid, what)
	}
	return tpl.Render(herald.Event{}), nil
}
