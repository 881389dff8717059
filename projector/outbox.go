package projector

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/internal/sleep"
	"github.com/heraldhq/herald/store"
)

// OutboxConfig configures an OutboxSource.
type OutboxConfig struct {
	// Store holds both the outbox table and the projection table (the
	// same database as the read model). Required.
	Store store.ProjectionStore
	// Scope is the outbox table (required) and optional tenant and type filters.
	Scope store.Scope
	// Projection and ProjectionTable name the bookkeeping the scan skips
	// finished events by. Projection is required; the table defaults to
	// store.DefaultProjectionTable. Use the projector's values.
	Projection      string
	ProjectionTable string
	// PollInterval is the pause after a scan that found nothing new.
	// Defaults to 100ms.
	PollInterval time.Duration
	// Lookback is how far back (in time) rescans reach for rows committed
	// out of id order: a transaction that committed a lower id up to this
	// long after a higher id was seen is still found quickly. Defaults to 10s.
	Lookback time.Duration
	// FullScanInterval is how often the scan starts over from the first id,
	// which finds any row however late it committed. Defaults to 5m.
	FullScanInterval time.Duration
}

func (c OutboxConfig) withDefaults() OutboxConfig {
	if c.ProjectionTable == "" {
		c.ProjectionTable = store.DefaultProjectionTable
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 100 * time.Millisecond
	}
	if c.Lookback <= 0 {
		c.Lookback = 10 * time.Second
	}
	if c.FullScanInterval <= 0 {
		c.FullScanInterval = 5 * time.Minute
	}
	return c
}

// OutboxSource is a broker.Subscriber that reads an outbox table directly,
// in id order, with no broker in between: the projection of events
// committed in the read model's own database.
//
// Commit order is not id order, so progress is not an "up to id N"
// watermark. Each scan skips, by an anti-join on the projection table,
// every row the projection finished; a scan may therefore start anywhere
// without applying anything twice. Scans continue after the highest id
// handed out; every Lookback/4 one rescans from the highest id seen
// Lookback ago (catching rows whose transaction committed late), and every
// FullScanInterval, and on start, one scans from the beginning. Ack and
// Nack only release the event from the in-hand set: the projection row is
// the progress.
type OutboxSource struct {
	cfg OutboxConfig

	mu       sync.Mutex
	inHand   map[string]bool // event ids handed out, not yet settled
	cursor   int64           // highest id handed out
	seen     []mark          // cursor values by time, for the lookback
	lastBack time.Time
	lastFull time.Time
}

// mark is the cursor at one instant.
type mark struct {
	at     time.Time
	cursor int64
}

// ErrOutboxConfig is wrapped by OutboxSource configuration errors.
var ErrOutboxConfig = errors.New("projector: invalid outbox source config")

// NewOutboxSource returns a source reading cfg's outbox table.
func NewOutboxSource(cfg OutboxConfig) (*OutboxSource, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.Store == nil:
		return nil, errors.Join(ErrOutboxConfig, errors.New("Store is nil"))
	case cfg.Projection == "":
		return nil, errors.Join(ErrOutboxConfig, errors.New("Projection is empty"))
	}
	if err := herald.ValidateIdentifier(cfg.Scope.Table); err != nil {
		return nil, errors.Join(ErrOutboxConfig, err)
	}
	return &OutboxSource{cfg: cfg, inHand: map[string]bool{}}, nil
}

// Receive returns up to most unfinished outbox rows not already in hand,
// waiting PollInterval between empty scans.
func (s *OutboxSource) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	for {
		from, limit := s.plan(most)
		recs, err := s.cfg.Store.ScanOutbox(ctx, store.OutboxScanParams{
			Scope: s.cfg.Scope, ProjectionTable: s.cfg.ProjectionTable, Projection: s.cfg.Projection,
			AfterID: from, Limit: limit,
		})
		if err != nil {
			return nil, err
		}
		if out := s.take(recs, most); len(out) > 0 {
			return out, nil
		}
		if !sleep.For(ctx, s.cfg.PollInterval) {
			return nil, ctx.Err()
		}
	}
}

// plan picks where the next scan starts and how many rows it asks for:
// enough to get past the rows in hand, which the scan returns again.
func (s *OutboxSource) plan(most int) (from int64, limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	from = s.cursor
	switch {
	case now.Sub(s.lastFull) >= s.cfg.FullScanInterval:
		from, s.lastFull, s.lastBack = 0, now, now
	case now.Sub(s.lastBack) >= s.cfg.Lookback/4:
		from, s.lastBack = s.lookbackFrom(now), now
	}
	s.seen = append(s.seen, mark{at: now, cursor: s.cursor})
	limit = most
	if from < s.cursor {
		limit += len(s.inHand)
	}
	return from, limit
}

// lookbackFrom returns the cursor as it was Lookback ago, dropping older marks.
func (s *OutboxSource) lookbackFrom(now time.Time) int64 {
	cut := now.Add(-s.cfg.Lookback)
	i := 0
	for i+1 < len(s.seen) && s.seen[i+1].at.Before(cut) {
		i++
	}
	s.seen = s.seen[i:]
	if len(s.seen) == 0 {
		return 0
	}
	return s.seen[0].cursor
}

// take turns scanned rows into messages, skipping those in hand.
func (s *OutboxSource) take(recs []store.Record, most int) []broker.Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []broker.Received
	for _, r := range recs {
		if len(out) == most {
			break // the rest stays after the cursor for the next scan
		}
		s.cursor = max(s.cursor, r.ID)
		if s.inHand[r.Event.ID] {
			continue
		}
		s.inHand[r.Event.ID] = true
		id, rowID := r.Event.ID, r.ID
		out = append(out, broker.Received{
			Event: r.Event,
			Ack:   func(context.Context) error { s.release(id, 0); return nil },
			Nack:  func(context.Context) error { s.release(id, rowID); return nil },
		})
	}
	return out
}

// release forgets an event in hand; a nacked one is rescanned.
func (s *OutboxSource) release(eventID string, rescanFrom int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inHand, eventID)
	if rescanFrom > 0 {
		s.cursor = min(s.cursor, rescanFrom-1)
	}
}

// Rewind makes the next scan start from the first id (a rebuild).
func (s *OutboxSource) Rewind(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cursor, s.lastFull, s.seen = 0, time.Time{}, nil
	return nil
}

// Close does nothing: the store belongs to the caller.
func (s *OutboxSource) Close() error { return nil }
