package giftwall

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// laneCounts is the relay Observer of a demo: totals per lane.
type laneCounts struct {
	mu     sync.Mutex
	byLane map[string]*relay.BatchStats
}

func newLaneCounts() *laneCounts { return &laneCounts{byLane: map[string]*relay.BatchStats{}} }

// BatchDone implements relay.Observer.
func (c *laneCounts) BatchDone(s relay.BatchStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.byLane[s.Lane]
	if t == nil {
		t = &relay.BatchStats{Lane: s.Lane}
		c.byLane[s.Lane] = t
	}
	t.Claimed += s.Claimed
	t.Delivered += s.Delivered
	t.Retried += s.Retried
	t.Dead += s.Dead
	t.Discarded += s.Discarded
	t.Released += s.Released
	t.Lost += s.Lost
	t.Duplicates += s.Duplicates
}

func (c *laneCounts) get(lane string) relay.BatchStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.byLane[lane]; t != nil {
		return *t
	}
	return relay.BatchStats{Lane: lane}
}

// LaneStatus is one lane in a Snapshot.
type LaneStatus struct {
	Name string
	// Backlog counts rows waiting: pending, retrying, in flight (delayed
	// rocket launches included).
	Backlog int64
	// Lag is the age of the oldest pending row.
	Lag time.Duration
	// Dead counts the lane's dead rows (all runs).
	Dead int64
	// Delivered, Retried, Discarded and Killed count this run's outcomes.
	Delivered, Retried, Discarded, Killed int64
}

// Snapshot is the demo's state at one instant.
type Snapshot struct {
	Elapsed time.Duration
	// GiftsTarget is the traffic's gift target (0: none).
	GiftsTarget int64
	// Traffic counters of this run.
	Gifts, Refused, Duplicates, Rockets, Events, Errors int64
	Lanes                                               []LaneStatus
	// Delivered, Retried, Dead and Discarded total the lanes' this-run counts.
	Delivered, Retried, Dead, Discarded int64
	// Injected counts the publishes Flaky failed.
	Injected int64
	// Projected counts the gifts applied to the wall this run; ProjectionLag
	// the gifts paid and not yet applied (or given up: dead).
	Projected, ProjectionLag, ProjectionFailed, ProjectionDead int64
	// Generating is true until the traffic stops.
	Generating bool
}

// Snapshot reads the counters and the tables.
func (d *Demo) Snapshot(ctx context.Context) (Snapshot, error) {
	s := Snapshot{Elapsed: time.Since(d.start), GiftsTarget: d.opts.Traffic.Gifts,
		Gifts: d.Traffic.Gifts.Load(), Refused: d.Traffic.Refused.Load(), Duplicates: d.Traffic.Duplicates.Load(),
		Rockets: d.Traffic.Rockets.Load(), Events: d.Traffic.Events.Load(), Errors: d.Traffic.Errors.Load()}
	select {
	case <-d.genDone:
	default:
		s.Generating = true
	}
	for _, f := range d.flaky {
		s.Injected += f.Failed()
	}
	for _, l := range d.app.WithHooks(d.rt.Lanes) {
		ls, err := d.lane(ctx, l)
		if err != nil {
			return s, err
		}
		s.Lanes = append(s.Lanes, ls)
		s.Delivered += ls.Delivered
		s.Retried += ls.Retried
		s.Dead += ls.Killed
		s.Discarded += ls.Discarded
	}
	ps, err := d.projectionStats(ctx)
	if err != nil {
		return s, err
	}
	s.Projected = ps.Done + ps.Dead - d.baseDone
	s.ProjectionLag = d.baseGift + s.Gifts - (ps.Done + ps.Dead)
	s.ProjectionFailed, s.ProjectionDead = ps.Failed, ps.Dead
	return s, nil
}

func (d *Demo) lane(ctx context.Context, l relay.Lane) (LaneStatus, error) {
	st, err := d.rt.Store.Stats(ctx, store.Scope{Table: l.Table, Tenant: l.Tenant,
		IncludeTypes: l.IncludeTypes, ExcludeTypes: l.ExcludeTypes})
	if err != nil {
		return LaneStatus{}, fmt.Errorf("lane %s: %w", l.Name, err)
	}
	c := d.counts.get(l.Name)
	return LaneStatus{Name: l.Name, Backlog: st.Pending + st.Retrying + st.InFlight, Lag: st.OldestPendingAge,
		Dead: st.Dead, Delivered: int64(c.Delivered), Retried: int64(c.Retried),
		Discarded: int64(c.Discarded), Killed: int64(c.Dead)}, nil
}

func (d *Demo) projectionStats(ctx context.Context) (store.ProjectionStats, error) {
	all, err := d.app.ps.ProjectionStats(ctx, d.app.cfg.ProjectionTable, ProjectionName)
	if err != nil || len(all) == 0 {
		return store.ProjectionStats{}, err
	}
	return all[0], nil
}

// Settled reports whether everything generated so far has been relayed
// (no backlog on any lane) and applied to the gift wall (or given up).
func (s Snapshot) Settled() bool {
	for _, l := range s.Lanes {
		if l.Backlog > 0 {
			return false
		}
	}
	return s.ProjectionLag <= 0 && s.ProjectionFailed == 0
}

// Settle waits, after the traffic stopped, until the snapshot is Settled;
// it fails when nothing moved for stall, or ctx ends. every, if not nil,
// gets each snapshot taken (a live view).
func (d *Demo) Settle(ctx context.Context, stall time.Duration, every func(Snapshot)) (Snapshot, error) {
	var last Snapshot
	progress := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s, err := d.Snapshot(ctx)
		if err != nil {
			return s, err
		}
		if every != nil {
			every(s)
		}
		if !s.Generating && s.Settled() {
			return s, nil
		}
		if s.moved(last) {
			last, progress = s, time.Now()
		} else if time.Since(progress) > stall {
			return s, fmt.Errorf("giftwall demo: nothing moved for %v: %+v", stall, s)
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-tick.C:
		}
	}
}

// moved reports whether anything changed since prev.
func (s Snapshot) moved(prev Snapshot) bool {
	if s.Gifts != prev.Gifts || s.Delivered != prev.Delivered || s.Retried != prev.Retried ||
		s.Projected != prev.Projected || s.Discarded != prev.Discarded || s.Dead != prev.Dead {
		return true
	}
	for i := range s.Lanes {
		if i >= len(prev.Lanes) || s.Lanes[i].Backlog != prev.Lanes[i].Backlog {
			return true
		}
	}
	return false
}
