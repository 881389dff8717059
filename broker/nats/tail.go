package nats

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

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
	// A tail is a person watching: it fails at once when the server is not
	// there, instead of the relay's patient reconnecting (whose first
	// request then fails with "outbound buffer limit exceeded").
	nc, err := natsgo.Connect(conn.URL, append(connectOptions(conn), natsgo.RetryOnFailedConnect(false))...)
	if err != nil {
		return fmt.Errorf("nats: cannot reach %s: %w%s", redact(conn.URL), err, dialReason(conn.URL))
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

// dialReason says why the first server of urls refuses a TCP connection
// (", dial tcp …: connection refused"), or nothing if it accepts one: the
// client's own error only says that no server was available.
func dialReason(urls string) string {
	first, _, _ := strings.Cut(urls, ",")
	u, err := url.Parse(strings.TrimSpace(first))
	if err != nil || u.Host == "" {
		return ""
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "4222")
	}
	c, err := net.DialTimeout("tcp", host, 2*time.Second)
	if err != nil {
		return " (" + err.Error() + ")"
	}
	_ = c.Close()
	return ""
}
