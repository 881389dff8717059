package verify

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/redis"
	"github.com/heraldhq/herald/config"
)

// redisTarget is a scratch stream, herald_verify_<id>, read back by a
// consumer group of verify's own and deleted at the end.
type redisTarget struct {
	cfg    redis.Config
	url    *url.URL
	stream string
	cl     *goredis.Client
}

func openRedis(ctx context.Context, b *config.Broker, s scratch) (target, error) {
	c, ok := b.Config.(*redis.BrokerConfig)
	if !ok {
		return nil, fmt.Errorf("verify: redis broker entry of type %T", b.Config)
	}
	cfg := c.WithDefaults()
	u, err := serverURL("redis", cfg.URL)
	if err != nil {
		return nil, err
	}
	opts, err := goredis.ParseURL(u.String())
	if err != nil {
		return nil, invalidf("redis url %q does not parse", redactURL(cfg.URL))
	}
	t := &redisTarget{cfg: cfg, url: u, stream: "herald_verify_" + s.id, cl: goredis.NewClient(opts)}
	if err := t.cl.Ping(ctx).Err(); err != nil {
		t.cl.Close()
		return nil, fmt.Errorf("verify: connect to Redis at %s: %w", u.Host, err)
	}
	return t, nil
}

func (t *redisTarget) describe() string {
	return fmt.Sprintf("Redis stream %s at %s", t.stream, t.url.Host)
}

func (t *redisTarget) upstreams() []string { return []string{t.url.Host} }

// childEntry keeps the user's settings but trimming: verify reads every
// entry back, and MAXLEN could drop one before it does.
func (t *redisTarget) childEntry(via []string) *config.Broker {
	c := t.cfg
	c.URL, c.MaxLen = viaURL(t.url, via[0]), 0
	return &config.Broker{Type: "redis", Config: &redis.BrokerConfig{Config: c}}
}

func (t *redisTarget) destination() broker.Template { return broker.MustParseTemplate(t.stream) }

func (t *redisTarget) subscribe(ctx context.Context) (broker.Subscriber, error) {
	sub, err := redis.NewSubscriber(ctx, redis.SubscriberConfig{URL: t.url.String(), Stream: t.stream, Group: redisGroup,
		BodyField: t.cfg.BodyField, Block: 20 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	return &regrouping{Subscriber: sub, t: t}, nil
}

const redisGroup = "herald_verify"

// regrouping makes the consumer group again when the server lost it (a
// restart without persistence loses the stream and its group): what the
// relays publish after that is still read, and only what the server
// forgot counts as lost.
type regrouping struct {
	*redis.Subscriber
	t *redisTarget
}

func (r *regrouping) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	msgs, err := r.Subscriber.Receive(ctx, most)
	if err != nil && strings.Contains(err.Error(), "NOGROUP") {
		_ = r.t.cl.XGroupCreateMkStream(ctx, r.t.stream, redisGroup, "0").Err()
	}
	return msgs, err
}

func (t *redisTarget) cleanup(ctx context.Context, keep bool) error {
	defer t.cl.Close()
	if keep {
		return nil
	}
	return t.cl.Del(ctx, t.stream).Err()
}
