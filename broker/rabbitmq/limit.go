package rabbitmq

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/heraldhq/herald"
)

// RabbitMQ limits a message's size by its max_message_size setting, which
// the server does not announce: AMQP's connection tuning gives frame_max,
// the largest frame, and a message is split across as many body frames as
// it needs (a 16 MiB message goes through a frame_max of 128 KiB). What the
// server does announce is its version, whose default max_message_size is
// the limit unless an operator changed it (then set max_payload). A
// message over the server's limit makes it close the channel with 406
// PRECONDITION_FAILED naming its limit: refusedLimit reads it from there.
const (
	// MaxMessageSize3 is RabbitMQ 3.8–3.13's default max_message_size.
	MaxMessageSize3 = 128 << 20
	// MaxMessageSize4 is RabbitMQ 4's default max_message_size.
	MaxMessageSize4 = 16 << 20
)

// versionLimit is the default max_message_size of the server version that
// props (the connection's server properties) announce, or 0 when they name
// none Herald knows (older than 3.8 had no such setting).
func versionLimit(props amqp.Table) int {
	v, _ := props["version"].(string)
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	switch {
	case err1 != nil || err2 != nil:
		return 0
	case major >= 4:
		return MaxMessageSize4
	case major == 3 && minor >= 8:
		return MaxMessageSize3
	}
	return 0
}

// refusal matches the reason of the channel close a message over the
// server's max_message_size causes.
var refusal = regexp.MustCompile(`larger than configured max size (\d+)`)

// refusedLimit returns the limit named by a channel close for a message
// over max_message_size, or 0 for any other close.
func refusedLimit(e *amqp.Error) int {
	if e == nil || e.Code != amqp.PreconditionFailed {
		return 0
	}
	m := refusal.FindStringSubmatch(e.Reason)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0
	}
	return n
}

// tooLarge is the error of a payload over limit (permanent, by the caller).
func tooLarge(id string, size, limit int, source string) error {
	return fmt.Errorf("%w: rabbitmq: event %s: payload is %d bytes, the limit (%s) is %d",
		herald.ErrPayloadTooLarge, id, size, source, limit)
}

// infoTimeout bounds the connection that asks a server its version at
// enqueue (BrokerConfig.PayloadLimit): the event is committed whether or
// not the broker is up.
const infoTimeout = 2 * time.Second

// serverPayloadLimit connects to cfg's server and returns its version's
// default max_message_size, 0 when it cannot be reached or names none.
func serverPayloadLimit(cfg Config) int {
	dialer := &net.Dialer{Timeout: infoTimeout}
	conn, err := amqp.DialConfig(cfg.URL, amqp.Config{Dial: func(network, addr string) (net.Conn, error) {
		c, err := dialer.Dial(network, addr)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(infoTimeout))
		}
		return c, err
	}, Properties: amqp.Table{"connection_name": "herald enqueue"}})
	if err != nil {
		return 0
	}
	defer conn.Close()
	return versionLimit(conn.Properties)
}
