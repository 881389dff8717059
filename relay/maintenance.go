package relay

import (
	"context"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/store"
)

// maxCleanupRounds bounds the statements of one cleanup run, so a huge
// backlog is worked off over several intervals instead of in one long burst.
const maxCleanupRounds = 100

// maintainer runs a lane's retention cleanup, at most once per interval
// across every worker and process (the store's TryLock is the gate).
type maintainer struct {
	store store.Store
	lane  Lane
	log   *slog.Logger
}

func (m *maintainer) run(ctx context.Context) {
	// Start soon but not in lockstep with other processes.
	t := time.NewTimer(time.Duration(float64(m.lane.Retention.Interval) * 0.1))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.runOnce(ctx)
		t.Reset(m.lane.Retention.Interval)
	}
}

// runOnce deletes old rows in bounded batches if this process won the
// interval's lock, and returns how many it deleted.
func (m *maintainer) runOnce(ctx context.Context) int64 {
	won, err := m.store.TryLock(ctx, "retention:"+m.lane.Table+":"+m.lane.Name, m.lane.Retention.Interval)
	if err != nil || !won {
		if err != nil && ctx.Err() == nil {
			m.log.Error("retention lock failed", slog.String("error", err.Error()))
		}
		return 0
	}
	r := m.lane.Retention
	p := store.CleanupParams{Scope: m.lane.Scope(), Delivered: r.Delivered, Dead: r.Dead, Active: r.Active, Limit: r.BatchSize}
	var total int64
	for range maxCleanupRounds {
		n, err := m.store.Cleanup(ctx, p)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Error("retention cleanup failed", slog.String("error", err.Error()))
			}
			break
		}
		total += n
		if n < int64(r.BatchSize) {
			break
		}
	}
	if total > 0 {
		m.log.Info("retention cleanup", slog.Int64("deleted", total))
	}
	return total
}
