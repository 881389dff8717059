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
	// PollInterval is the pause after a read that found nothing new, and
	// how often ids not yet visible are looked at again. Defaults to 100ms.
	PollInterval time.Duration
	// Lookback is how long an id found missing (a transaction that took a
	// lower id than one already read and had not committed) is looked for
	// again: a row committed up to this long out of id order is found
	// within PollInterval. Defaults to 10s.
	Lookback time.Duration
	// FullScanInterval is how often a sweep reads the table again from the
	// first id, a page per read beside the new rows, which finds any row
	// however late it committed. Defaults to 5m.
	FullScanInterval time.Duration
	// PageSize is the most rows one read takes. Defaults to 500.
	PageSize int
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
	if c.PageSize <= 0 {
		c.PageSize = 500
	}
	return c
}

// OutboxSource is a broker.Subscriber that reads an outbox table directly,
// in id order, with no broker in between: the projection of events
// committed in the read model's own database.
//
// Commit order is not id order, so progress is not an "up to id N"
// watermark alone. Each read takes the next PageSize rows after the
// highest id read (store.ProjectionStore.ReadOutbox: open or finished,
// every id it saw), so its cost is bounded by the page, never by how many
// rows the projection has finished. An id missing between those seen
// belongs to a transaction not committed yet (or rolled back): it is kept
// as a gap and read again by id every PollInterval for Lookback, so a row
// that commits late is found within a poll. A sweep from the first id
// every FullScanInterval (one page per read, beside the new rows) finds
// rows later than that; the first reads after a start are such a sweep.
// The projection row is the progress: a row read twice is applied once.
// Ack and Nack only release the event from the held set; a nacked row is
// read again by id.
type OutboxSource struct {
	cfg OutboxConfig

	mu       sync.Mutex
	held     map[string]bool // event ids buffered or handed out, not yet settled
	buffer   []store.Record  // open rows read, not handed out yet
	cursor   int64           // highest id read
	gaps     map[int64]time.Time
	lastGaps time.Time
	sweep    int64 // next sweep page starts after this id; -1: no sweep
	sweepTo  int64 // the sweep ends at this id (the cursor when it began)
	lastFull time.Time
	reading  *pendingRead // the read in the background, if any
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
	return &OutboxSource{cfg: cfg, held: map[string]bool{}, gaps: map[int64]time.Time{}, sweep: -1,
		lastFull: time.Now()}, nil
}

// Receive returns up to most open outbox rows not already held, waiting
// PollInterval between reads that found nothing. While fewer than a page
// of rows are buffered it reads the next page in the background, so that
// the workers apply one page while the next one is read.
func (s *OutboxSource) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	for {
		out := s.handOut(most)
		r := s.readAhead(ctx)
		if len(out) > 0 {
			return out, nil
		}
		if r == nil {
			continue // a read ended and filled the buffer since handOut
		}
		select {
		case <-r.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		switch {
		case r.err != nil && r.ctx.Err() != nil && ctx.Err() == nil:
			continue // started by an earlier call whose context ended: read again
		case r.err != nil:
			return nil, r.err
		case !r.found && !sleep.For(ctx, s.cfg.PollInterval):
			return nil, ctx.Err()
		}
	}
}

// pendingRead is one read in the background.
type pendingRead struct {
	ctx   context.Context
	done  chan struct{} // closed when found and err are set
	found bool
	err   error
}

// readAhead returns the read in flight, or starts one when fewer than a
// page of rows are buffered; nil when none is needed and none runs.
func (s *OutboxSource) readAhead(ctx context.Context) *pendingRead {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reading != nil || len(s.buffer) >= s.cfg.PageSize {
		return s.reading
	}
	r := &pendingRead{ctx: ctx, done: make(chan struct{})}
	s.reading = r
	go func() {
		defer close(r.done)
		r.found, r.err = s.read(ctx)
		s.mu.Lock()
		s.reading = nil
		s.mu.Unlock()
	}()
	return r
}

// waitRead waits for a read in the background to end.
func (s *OutboxSource) waitRead() {
	s.mu.Lock()
	r := s.reading
	s.mu.Unlock()
	if r != nil {
		<-r.done
	}
}

// read runs the reads that are due (gaps, a sweep page, the next page)
// and reports whether anything open was buffered or the last page was
// full (more may follow at once).
func (s *OutboxSource) read(ctx context.Context) (bool, error) {
	if ids := s.gapsDue(); len(ids) > 0 {
		page, err := s.readPage(ctx, store.OutboxScanParams{IDs: ids})
		if err != nil {
			return false, err
		}
		s.gapsRead(page)
	}
	if from, ok := s.sweepDue(); ok {
		page, err := s.readPage(ctx, store.OutboxScanParams{AfterID: from, Limit: s.cfg.PageSize})
		if err != nil {
			return false, err
		}
		s.sweepRead(page)
	}
	page, err := s.readPage(ctx, store.OutboxScanParams{AfterID: s.cursorNow(), Limit: s.cfg.PageSize})
	if err != nil {
		return false, err
	}
	s.nextRead(page)
	return s.buffered() > 0 || len(page.Visible) == s.cfg.PageSize, nil
}

func (s *OutboxSource) buffered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buffer)
}

// readPage reads one page within the source's scope and projection.
func (s *OutboxSource) readPage(ctx context.Context, p store.OutboxScanParams) (store.OutboxPage, error) {
	p.Scope, p.ProjectionTable, p.Projection = s.cfg.Scope, s.cfg.ProjectionTable, s.cfg.Projection
	return s.cfg.Store.ReadOutbox(ctx, p)
}

func (s *OutboxSource) cursorNow() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursor
}

// handOut turns up to most buffered rows into messages.
func (s *OutboxSource) handOut(most int) []broker.Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(most, len(s.buffer))
	out := make([]broker.Received, n)
	for i, r := range s.buffer[:n] {
		id, rowID := r.Event.ID, r.ID
		out[i] = broker.Received{
			Event: r.Event,
			Ack:   func(context.Context) error { s.release(id, 0); return nil },
			Nack:  func(context.Context) error { s.release(id, rowID); return nil },
		}
	}
	s.buffer = s.buffer[n:]
	return out
}

// hold buffers the open rows not already held; the caller holds s.mu.
func (s *OutboxSource) hold(recs []store.Record) {
	for _, r := range recs {
		if !s.held[r.Event.ID] {
			s.held[r.Event.ID] = true
			s.buffer = append(s.buffer, r)
		}
	}
}

// release forgets a settled event; a nacked one's row is read again by id.
func (s *OutboxSource) release(eventID string, rowID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, eventID)
	if rowID > 0 {
		s.gaps[rowID] = time.Now()
	}
}

// Rewind makes the next read start from the first id (a rebuild), after
// a read still in the background.
func (s *OutboxSource) Rewind(context.Context) error {
	s.waitRead()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cursor, s.sweep, s.buffer, s.gaps = 0, -1, nil, map[int64]time.Time{}
	s.held = map[string]bool{}
	return nil
}

// Close waits for a read in the background to end; the store belongs to
// the caller.
func (s *OutboxSource) Close() error {
	s.waitRead()
	return nil
}
