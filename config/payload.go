package config

import (
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/heraldhq/herald/broker/nats"
)

// natsInfoTimeout bounds the look-up of a NATS server's max_payload at
// enqueue: the event is committed whether or not the broker is up.
const natsInfoTimeout = 2 * time.Second

// PayloadLimit is the largest payload lane l accepts at enqueue: the
// smaller of its max_payload and what its broker takes, so that an event
// the broker would refuse is refused before it is committed (the relay
// checks again at publish). For a NATS server, its own max_payload (from
// the server's INFO) less the room kept for headers; when the server cannot
// be reached, NATS's default 1 MiB is assumed. 0 means no limit is known
// (stdout), and Herald's default applies.
func (f *File) PayloadLimit(l *Lane) int {
	limit := l.MaxPayload
	if b := f.Brokers[l.Broker]; b != nil {
		if bl := b.payloadLimit(); bl > 0 && (limit == 0 || bl < limit) {
			limit = bl
		}
	}
	return limit
}

// payloadLimit is the broker's payload limit as its config or server says.
func (b *Broker) payloadLimit() int {
	switch {
	case b.NATS != nil:
		return natsPayloadLimit(b.NATS)
	case b.Kafka != nil:
		return b.Kafka.WithDefaults().MaxPayload
	case b.RabbitMQ != nil:
		return b.RabbitMQ.WithDefaults().MaxPayload
	case b.Redis != nil:
		return b.Redis.WithDefaults().MaxPayload
	case b.RocketMQ != nil:
		return b.RocketMQ.WithDefaults().MaxPayload
	case b.Webhook != nil:
		return b.Webhook.WithDefaults().MaxPayload
	}
	return 0
}

// natsPayloadLimit asks a NATS server for its max_payload; an embedded
// server runs with NATS's default.
func natsPayloadLimit(c *NATSBroker) int {
	max := nats.DefaultMaxPayload
	if c.Embedded == nil {
		opts := []natsgo.Option{natsgo.Timeout(natsInfoTimeout), natsgo.Name("herald enqueue")}
		if c.CredsFile != "" {
			opts = append(opts, natsgo.UserCredentials(c.CredsFile))
		}
		if nc, err := natsgo.Connect(c.URL, opts...); err == nil {
			if m := nc.MaxPayload(); m > 0 {
				max = int(m)
			}
			nc.Close()
		}
	}
	return max - nats.HeaderAllowance
}
