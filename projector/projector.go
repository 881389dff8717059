package projector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/heraldhq/herald/backoff"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/internal/sleep"
	"github.com/heraldhq/herald/projection"
	"github.com/heraldhq/herald/store"
)

// Projector applies events from a source to a read model exactly once.
// One Projector runs one projection; several processes may run the same
// projection against the same database at once.
type Projector struct {
	cfg      Config
	resolver *projection.Resolver // nil without Config.EventFrom
}

// New returns a Projector for cfg, or an error naming the field at fault.
func New(cfg Config) (*Projector, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Projector{cfg: cfg}
	if !cfg.EventFrom.IsZero() {
		r, err := cfg.EventFrom.Compile("event_from")
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		p.resolver = r
	}
	return p, nil
}

// Name returns the projection's name.
func (p *Projector) Name() string { return p.cfg.Name }

// Migrate creates or upgrades the projection table.
func (p *Projector) Migrate(ctx context.Context) error {
	return p.cfg.Store.MigrateProjections(ctx, p.cfg.Table)
}

// Run receives messages from src and applies them until ctx ends, then
// waits for the events in hand: an event being applied is rolled back by
// the cancellation and handed back (Nack), never acked unapplied. Run does
// not close src. It returns nil after ctx ends, or the error that stopped it.
func (p *Projector) Run(ctx context.Context, src broker.Subscriber) error {
	shards := make([]chan job, p.cfg.Workers)
	var wg sync.WaitGroup
	for i := range shards {
		shards[i] = make(chan job, p.cfg.BatchSize)
		wg.Go(func() { p.work(ctx, shards[i]) })
	}
	var bg sync.WaitGroup
	bg.Go(func() { p.maintain(ctx, shards) })
	p.receive(ctx, src, shards)
	bg.Wait() // no more sends into the shards
	for _, l := range shards {
		close(l)
	}
	wg.Wait()
	return nil
}

// receive moves messages from src to the workers until ctx ends. Receive
// errors (a broker outage) are logged and retried with a growing pause.
func (p *Projector) receive(ctx context.Context, src broker.Subscriber, shards []chan job) {
	pause := backoff.Series{Policy: pauseAfterError}
	for ctx.Err() == nil {
		msgs, err := src.Receive(ctx, p.cfg.BatchSize)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.cfg.Logger.Warn("projector: receive failed", "projection", p.cfg.Name, "err", err)
			sleep.For(ctx, pause.Next())
			continue
		}
		pause.Reset()
		for i, m := range msgs {
			m, ok := p.admit(ctx, m)
			if !ok {
				continue
			}
			j, w := p.dispatch(m, len(shards))
			select {
			case shards[w] <- j:
			case <-ctx.Done():
				nackAll(msgs[i:])
				return
			}
		}
	}
}

// work applies the messages of one shard, in batches of what is already
// waiting (up to Config.ApplyBatch). After ctx ends it hands back what is
// left in the shard.
func (p *Projector) work(ctx context.Context, shard <-chan job) {
	batch := make([]job, 0, p.cfg.ApplyBatch)
	for m := range shard {
		if ctx.Err() != nil {
			nackAll([]broker.Received{m.Received})
			continue
		}
		batch = append(batch[:0], m)
	fill:
		for len(batch) < p.cfg.ApplyBatch {
			select {
			case m, ok := <-shard:
				if !ok {
					break fill
				}
				batch = append(batch, m)
			default:
				break fill
			}
		}
		if len(batch) == 1 && !p.sendsMade(batch[0]) {
			p.handle(ctx, batch[0].Received)
		} else {
			p.handleBatch(ctx, batch)
		}
	}
}

// sendsMade says whether j's statements, made when it was routed, go to
// the store as they are: then even a batch of one takes handleBatch, where
// handle would run the handler, which makes them again.
func (p *Projector) sendsMade(j job) bool {
	_, ok := p.cfg.Store.(store.StatementApplier)
	return ok && j.made
}

// settleTimeout bounds an ack or nack, which must not hang a shutdown.
const settleTimeout = 5 * time.Second

func nackAll(msgs []broker.Received) {
	for _, m := range msgs {
		settle(m.Nack)
	}
}

// settle runs an ack or nack on a context of its own: after a commit the
// ack must be attempted even when the run's context just ended.
func settle(f func(context.Context) error) error {
	if f == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	return f(ctx)
}

// pauseAfterError spaces the retries of a failed receive or store call:
// short at first (a lost connection is often back at once), then up to 5s
// while the broker or database stays away.
var pauseAfterError = backoff.Policy{Initial: 10 * time.Millisecond, Max: 5 * time.Second}

// ErrRewind is returned by Rebuild when the source cannot start over.
var ErrRewind = errors.New("projector: the source cannot rewind")

// Rebuild resets the projection (its rows and, through Config.Reset, the
// read model, in one transaction) and rewinds src to the start of its
// stream when it can. The outbox source rewinds by itself: every row is
// unfinished again. Stop the projection's Run in every process first.
func (p *Projector) Rebuild(ctx context.Context, src broker.Subscriber) (int64, error) {
	if src != nil {
		if _, ok := src.(broker.Rewinder); !ok {
			return 0, fmt.Errorf("%w: %T", ErrRewind, src)
		}
	}
	n, err := p.cfg.Store.ResetProjection(ctx, p.cfg.Table, p.cfg.Name, p.resetHook(ctx))
	if err != nil {
		return 0, err
	}
	if r, ok := src.(broker.Rewinder); ok {
		if err := r.Rewind(ctx); err != nil {
			return n, fmt.Errorf("projector: rebuild %s: rewind: %w", p.cfg.Name, err)
		}
	}
	return n, nil
}

// Stats returns the projection's row counts.
func (p *Projector) Stats(ctx context.Context) (store.ProjectionStats, error) {
	all, err := p.cfg.Store.ProjectionStats(ctx, p.cfg.Table, p.cfg.Name)
	if err != nil || len(all) == 0 {
		return store.ProjectionStats{Projection: p.cfg.Name}, err
	}
	return all[0], nil
}
