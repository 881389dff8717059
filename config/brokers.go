package config

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/natsembed"
	"github.com/heraldhq/herald/broker/stdout"
)

// startBroker connects one configured broker, starting its embedded server
// first if it has one.
func (rt *Runtime) startBroker(ctx context.Context, name string, b *Broker, log *slog.Logger) (broker.Publisher, error) {
	switch {
	case b.NATS != nil:
		return rt.startNATS(ctx, name, b.NATS, log)
	case b.Stdout != nil:
		rt.Endpoints[name] = "standard output"
		return stdout.New(stdout.Config{Writer: os.Stdout, Source: b.Stdout.Source}), nil
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
	p, err := nats.New(ctx, nats.Config{URL: url, Stream: c.Stream, Subjects: c.Subjects,
		CreateStream: c.CreateStream, Source: c.Source, CredsFile: c.CredsFile})
	if err != nil {
		return nil, err
	}
	rt.closers = append(rt.closers, p.Close)
	log.Debug("broker connected", slog.String("broker", name))
	return p, nil
}
