package verify

import (
	"context"
	"fmt"
	"net/url"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/rabbitmq"
	"github.com/heraldhq/herald/config"
)

// rabbitTarget is a scratch durable queue, herald_verify_<id>, that the
// children publish to through the default exchange (the queue's name as
// routing key), read back and deleted at the end. The lane's own exchange
// is left alone: a scratch queue bound to a fanout or headers exchange
// would take production messages.
type rabbitTarget struct {
	cfg   rabbitmq.Config
	url   *url.URL
	queue string
	conn  *amqp.Connection
}

func openRabbit(ctx context.Context, b *config.Broker, s scratch) (target, error) {
	c, ok := b.Config.(*rabbitmq.BrokerConfig)
	if !ok {
		return nil, fmt.Errorf("verify: rabbitmq broker entry of type %T", b.Config)
	}
	cfg := c.Config
	if cfg.URL == "" {
		cfg.URL = rabbitmq.DefaultURL
	}
	u, err := serverURL("rabbitmq", cfg.URL)
	if err != nil {
		return nil, err
	}
	t := &rabbitTarget{cfg: cfg, url: u, queue: "herald_verify_" + s.id}
	if t.conn, err = amqp.Dial(u.String()); err != nil {
		return nil, fmt.Errorf("verify: connect to RabbitMQ at %s: %w", u.Host, err)
	}
	ch, err := t.conn.Channel()
	if err == nil {
		_, err = ch.QueueDeclare(t.queue, true, false, false, false, nil)
		ch.Close()
	}
	if err != nil {
		t.conn.Close()
		return nil, fmt.Errorf("verify: declare queue %s: %w", t.queue, err)
	}
	return t, nil
}

func (t *rabbitTarget) describe() string {
	return fmt.Sprintf("RabbitMQ queue %s (default exchange) at %s", t.queue, t.url.Host)
}

func (t *rabbitTarget) upstreams() []string { return []string{t.url.Host} }

func (t *rabbitTarget) childEntry(via []string) *config.Broker {
	c := t.cfg
	c.URL, c.Exchange, c.AllowUnroutable = viaURL(t.url, via[0]), "", false
	return &config.Broker{Type: "rabbitmq", Config: &rabbitmq.BrokerConfig{Config: c}}
}

func (t *rabbitTarget) destination() broker.Template { return broker.MustParseTemplate(t.queue) }

func (t *rabbitTarget) subscribe(ctx context.Context) (broker.Subscriber, error) {
	return rabbitmq.NewSubscriber(ctx, rabbitmq.SubscriberConfig{URL: t.url.String(), Queue: t.queue, Prefetch: 1000})
}

func (t *rabbitTarget) cleanup(_ context.Context, keep bool) error {
	defer t.conn.Close()
	if keep {
		return nil
	}
	ch, err := t.conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	_, err = ch.QueueDelete(t.queue, false, false, false)
	return err
}
