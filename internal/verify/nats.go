package verify

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/natsembed"
	"github.com/heraldhq/herald/config"
)

// natsTarget is a scratch JetStream stream, HERALD_VERIFY_<id>, on the
// subjects herald_verify_<id>.>, created on the lane's server (or on an
// embedded server verify starts when the lane's broker is the embedded
// one: the children must share one server).
type natsTarget struct {
	cfg     nats.BrokerConfig
	url     *url.URL
	stream  string
	subject string
	nc      *natsgo.Conn
	js      jetstream.JetStream
	embed   *natsembed.Server
}

func openNATS(ctx context.Context, b *config.Broker, s scratch) (target, error) {
	c, ok := b.Config.(*nats.BrokerConfig)
	if !ok {
		return nil, fmt.Errorf("verify: nats broker entry of type %T", b.Config)
	}
	t := &natsTarget{cfg: *c, stream: "HERALD_VERIFY_" + strings.ToUpper(s.id), subject: "herald_verify_" + s.id}
	raw := c.URL
	if c.Embedded != nil {
		srv, err := natsembed.Start(natsembed.Config{Dir: filepath.Join(s.dir, "nats"), Port: natsembed.RandomPort})
		if err != nil {
			return nil, fmt.Errorf("verify: embedded NATS server: %w", err)
		}
		t.embed, raw = srv, srv.ClientURL()
	}
	u, err := serverURL("nats", raw)
	if err != nil {
		t.close()
		return nil, err
	}
	t.url = u
	if err := t.connect(ctx); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// connect creates the scratch stream directly (not through the proxy).
func (t *natsTarget) connect(ctx context.Context) error {
	opts := []natsgo.Option{natsgo.Name("herald-verify")}
	if t.cfg.CredsFile != "" {
		opts = append(opts, natsgo.UserCredentials(t.cfg.CredsFile))
	}
	nc, err := natsgo.Connect(t.url.String(), opts...)
	if err != nil {
		return fmt.Errorf("verify: connect to NATS at %s: %w", t.url.Host, err)
	}
	t.nc = nc
	if t.js, err = jetstream.New(nc); err != nil {
		return err
	}
	_, err = t.js.CreateStream(ctx, jetstream.StreamConfig{Name: t.stream, Subjects: []string{t.subject + ".>"},
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})
	if err != nil {
		return fmt.Errorf("verify: create stream %s: %w", t.stream, err)
	}
	return nil
}

func (t *natsTarget) describe() string {
	return fmt.Sprintf("NATS stream %s (subjects %s.>) at %s", t.stream, t.subject, t.url.Host)
}

func (t *natsTarget) upstreams() []string { return []string{t.url.Host} }

func (t *natsTarget) childEntry(via []string) *config.Broker {
	c := t.cfg
	c.URL, c.Stream, c.Subjects, c.CreateStream, c.Embedded = viaURL(t.url, via[0]), t.stream, []string{t.subject + ".>"}, false, nil
	return &config.Broker{Type: "nats", Config: &c}
}

func (t *natsTarget) destination() broker.Template {
	return broker.MustParseTemplate(t.subject + ".events")
}

// subscribe reads the scratch stream back with Herald's own NATS
// subscriber, a continuous pull that hands each message over as it
// arrives (directly, not through the proxy).
func (t *natsTarget) subscribe(ctx context.Context) (broker.Subscriber, error) {
	c := t.cfg
	return nats.NewSubscriber(ctx, nats.SubscriberConfig{URL: t.url.String(), CredsFile: c.CredsFile,
		Stream: t.stream, Durable: "herald_verify",
		MaxAckPending: 10000, Name: "herald-verify"})
}

func (t *natsTarget) cleanup(ctx context.Context, keep bool) error {
	var err error
	if !keep && t.js != nil {
		err = t.js.DeleteStream(ctx, t.stream)
	}
	t.close()
	return err
}

func (t *natsTarget) close() {
	if t.nc != nil {
		t.nc.Close()
	}
	if t.embed != nil {
		t.embed.Shutdown()
	}
}

// redactURL hides a URL's password.
func redactURL(s string) string { return config.Redact(s) }
