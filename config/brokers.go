package config

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/kafka"
	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/natsembed"
	"github.com/heraldhq/herald/broker/rabbitmq"
	"github.com/heraldhq/herald/broker/redis"
	"github.com/heraldhq/herald/broker/rocketmq"
	"github.com/heraldhq/herald/broker/stdout"
	"github.com/heraldhq/herald/broker/webhook"
)

// result is a constructor's answer, to pass to closing in one expression.
type result[P broker.Publisher] struct {
	p   P
	err error
}

func built[P broker.Publisher](p P, err error) result[P] { return result[P]{p, err} }

// closing registers a new publisher for Close, or returns its error.
func closing[P broker.Publisher](rt *Runtime, r result[P]) (broker.Publisher, error) {
	if r.err != nil {
		return nil, r.err
	}
	rt.closers = append(rt.closers, r.p.Close)
	return r.p, nil
}

// startBroker connects one configured broker, starting its embedded server
// first if it has one.
func (rt *Runtime) startBroker(ctx context.Context, name string, b *Broker, log *slog.Logger) (broker.Publisher, error) {
	switch {
	case b.NATS != nil:
		return rt.startNATS(ctx, name, b.NATS, log)
	case b.Stdout != nil:
		rt.Endpoints[name] = "standard output"
		return stdout.New(stdout.Config{Writer: os.Stdout, Source: b.Stdout.Source}), nil
	case b.Kafka != nil:
		rt.Endpoints[name] = "Kafka at " + strings.Join(b.Kafka.Brokers, ",")
		return closing(rt, built(kafka.New(ctx, b.Kafka.Config)))
	case b.RabbitMQ != nil:
		rt.Endpoints[name] = "RabbitMQ at " + Redact(b.RabbitMQ.URL)
		c := b.RabbitMQ.Config
		return rt.connectLazily(ctx, name, c.WithDefaults().MaxPayload, func(ctx context.Context) (broker.Publisher, error) {
			return rabbitmq.New(ctx, c)
		}, log)
	case b.Redis != nil:
		rt.Endpoints[name] = "Redis Streams at " + Redact(b.Redis.URL)
		c := b.Redis.Config
		return rt.connectLazily(ctx, name, c.WithDefaults().MaxPayload, func(ctx context.Context) (broker.Publisher, error) {
			return redis.New(ctx, c)
		}, log)
	case b.RocketMQ != nil:
		rt.Endpoints[name] = "RocketMQ name servers " + strings.Join(b.RocketMQ.NameServers, ",")
		cfg := b.RocketMQ.Config
		cfg.Logger = log
		return closing(rt, built(rocketmq.New(ctx, cfg)))
	case b.Webhook != nil:
		rt.Endpoints[name] = "webhooks (URL from each lane's destination)"
		return closing(rt, built(webhook.New(ctx, b.Webhook.Config)))
	}
	return nil, fmt.Errorf("broker type %q has no publisher", b.Type)
}

func (rt *Runtime) startNATS(ctx context.Context, name string, c *NATSBroker, log *slog.Logger) (broker.Publisher, error) {
	url := c.URL
	if e := c.Embedded; e != nil {
		srv, err := natsembed.Start(natsembed.Config{Dir: e.Dir, Host: e.Host, Port: e.Port, SyncAlways: e.SyncAlways})
		if err != nil {
			return nil, fmt.Errorf("embedded NATS server: %w", err)
		}
		rt.closers = append(rt.closers, func() error { srv.Shutdown(); return nil })
		url = srv.ClientURL()
		rt.Endpoints[name] = "embedded NATS JetStream at " + url + " (data in " + e.Dir + ")"
	} else {
		rt.Endpoints[name] = "NATS JetStream at " + Redact(url)
	}
	rt.NATSURLs[name] = url
	p, err := nats.New(ctx, nats.Config{URL: url, Stream: c.Stream, Subjects: c.Subjects,
		CreateStream: c.CreateStream, Source: c.Source, CredsFile: c.CredsFile})
	if err != nil {
		return nil, err
	}
	rt.closers = append(rt.closers, p.Close)
	log.Debug("broker connected", slog.String("broker", name))
	return p, nil
}
