package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/projector/sqlproj"
	"github.com/heraldhq/herald/store"
)

// Projection is a configured projection ready to run: its projector and
// its source.
type Projection struct {
	Projector *projector.Projector
	Source    broker.Subscriber
}

// StartProjections prepares every configured projection's statements
// against the store (a statement the database refuses is config.ErrInvalid with
// its key path, so `herald run` exits 2), migrates the ledger tables when
// migrate is on, and connects each source. Call it after StartBrokers
// (NATS URLs); the sources are closed by Close.
func (rt *Runtime) StartProjections(ctx context.Context, log *slog.Logger, migrate bool) ([]Projection, error) {
	var out []Projection
	for i, p := range rt.File.Projections {
		path := rt.File.ProjectionPath(i)
		c, err := sqlproj.Prepare(ctx, p, rt.Store, path)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", config.ErrInvalid, err)
		}
		proj, err := c.Projector(log)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", config.ErrInvalid, path, err)
		}
		if migrate && *rt.File.Store.Migrate {
			if err := proj.Migrate(ctx); err != nil {
				return nil, fmt.Errorf("%s: migrate the ledger: %w", path, err)
			}
		}
		src, err := rt.projectionSource(ctx, rt.Store, p, log)
		if err != nil {
			return nil, fmt.Errorf("%s.source: %w", path, err)
		}
		rt.closers = append(rt.closers, src.Close)
		out = append(out, Projection{Projector: proj, Source: src})
	}
	return out, nil
}

// projectionSource connects a projection's source: an outbox scan, or a
// subscriber on its broker (group = the projection's name by default).
func (rt *Runtime) projectionSource(ctx context.Context, s store.ProjectionStore, p sqlproj.Projection, log *slog.Logger) (broker.Subscriber, error) {
	src := p.Source
	if src.Outbox != "" {
		return projector.NewOutboxSource(projector.OutboxConfig{Store: s, Projection: p.Name, ProjectionTable: p.Table,
			Scope: store.Scope{Table: src.Outbox, IncludeTypes: p.IncludeTypes, ExcludeTypes: p.ExcludeTypes}})
	}
	group := src.Group
	if group == "" {
		group = p.Name
	}
	opener, ok := rt.File.Brokers[src.Broker].Config.(broker.SubscriberOpener)
	if !ok {
		return nil, errors.New("no subscriber for this broker type")
	}
	return opener.OpenSubscriber(ctx, broker.SubscribeRequest{Group: group, Destination: src.Destination,
		IncludeTypes: p.IncludeTypes, ClientURL: rt.ClientURLs[src.Broker], Logger: log,
		DB: rt.Store.DB(), Dialect: rt.Store.Dialect()})
}
