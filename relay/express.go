package relay

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/store"
)

// The express worker of a fair lane.
//
// A fair claim gives a small tenant's new row a place in the next batch,
// but a lane draining a backlog has every worker's pipeline full: the row
// then waits for the batch being published and the marks queued before its
// own (worker.run), a few batch cycles of the big tenant — 100 to 140 ms
// at batch 200 on a quiet two-core machine. So a fair lane runs one more
// worker, the express one, that claims only for tenants that are not busy
// (the lane's workers found fewer ready rows than a share the last time
// they claimed for them), at most expressShare rows each. Its batches are
// small and its pipeline is empty, so a quiet tenant's event is published
// and marked in one short cycle after its commit wakes the worker. Claims
// are the store's (leases, fencing, key order), so the express worker and
// the others never hold the same row. The other workers leave the quiet
// tenants to it (notQuiet) and share their batches among the busy ones, so
// a quiet tenant's row does not land in a long batch; what the express
// worker misses, the rest of a batch (the plain claim) still takes.

// expressShare is the most rows the express worker claims for one tenant:
// a quiet tenant has a few ready rows at a time, and more than this means
// it is busy and the lane's batches serve it.
const expressShare = 16

// busyTenants is what a fair lane's workers learned about its tenants: a
// tenant is busy when its last claim filled the share asked for, quiet when
// it did not, and unknown before any claim for it (both kinds of worker
// claim for an unknown tenant, so a new tenant's first rows are shared into
// the next batch whichever worker claims first).
type busyTenants struct {
	mu   sync.Mutex
	busy map[string]bool // absent: unknown
}

func newBusyTenants() *busyTenants { return &busyTenants{busy: map[string]bool{}} }

// saw records that a claim asked for limit rows of tenant and got got
// (nothing on a lane without an express worker: b is nil).
func (b *busyTenants) saw(tenant string, limit, got int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.busy[tenant] = got >= limit
}

// notQuiet keeps the tenants not known to be quiet: with an express worker
// for the quiet ones, the lane's other workers share their batches among
// these (and the rest of the lane). Without one (b is nil), every tenant.
func (b *busyTenants) notQuiet(tenants []string) []string {
	return b.keep(tenants, true)
}

// notBusy keeps the tenants not known to be busy: the express worker's.
func (b *busyTenants) notBusy(tenants []string) []string {
	return b.keep(tenants, false)
}

// keep drops the tenants known to be !busy.
func (b *busyTenants) keep(tenants []string, busy bool) []string {
	if b == nil {
		return tenants
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.DeleteFunc(tenants, func(t string) bool {
		was, known := b.busy[t]
		return known && was != busy
	})
}

// names returns the tenants known to be busy, which the express worker
// does not serve (nil when b is nil).
func (b *busyTenants) names() []string {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for t, busy := range b.busy {
		if busy {
			out = append(out, t)
		}
	}
	return out
}

// expressMemory is how long the express worker keeps claiming directly for
// a quiet tenant it served, without listing the lane's tenants first, and
// expressRecentMax the most tenants it claims for so.
//
// Listing costs more than it looks on PostgreSQL during a drain: every row
// claimed and marked leaves dead entries in the tenant index until vacuum,
// at the front of the busy tenant's range, and the list's first index dive
// walks them (up to one per row drained so far). Listing on every wakeup
// put the quiet tenant's commit → ack p50 at 12–18 ms on a quiet machine
// during a 200,000-row drain, 5–9 ms without (MariaDB, whose purge removes
// the entries: 3–6 ms, then under 1 ms). A tenant-scoped claim dives into
// the quiet tenant's own few entries.
//
// expressListEvery is the longest the express worker goes between lists
// while it has recent tenants (the lane's poll interval if shorter): a
// quiet tenant it has not served lately, which the other workers leave to
// it, waits at most this much longer.
//
// expressIdlePoll is the longest the express worker waits between looks,
// unless woken, once it has served no quiet tenant within expressMemory
// (pacer.expressIdleDelay); a lane's poll_interval above it wins.
const (
	expressMemory    = time.Second
	expressRecentMax = 32
	expressListEvery = 20 * time.Millisecond
	expressIdlePoll  = 320 * time.Millisecond
)

// expressState is the express worker's memory between claims.
type expressState struct {
	listed time.Time            // the last tenant list
	recent map[string]time.Time // quiet tenants served, and when
}

// claimExpress claims up to expressShare rows of each quiet tenant that has
// claimable rows, under the batch's one token. It lists the lane's tenants
// at most every expressListEvery; between lists it claims for the quiet
// tenants it served within expressMemory. A new tenant is unknown to the
// busy map, so the lane's other workers serve it meanwhile; a quiet one not
// served lately is found by the next list, within expressListEvery.
func (w *worker) claimExpress(ctx context.Context, p store.ClaimParams) ([]store.Record, error) {
	x := &w.expr
	now := time.Now()
	tenants := x.recentTenants(now)
	if len(tenants) == 0 || len(tenants) >= expressRecentMax || now.Sub(x.listed) >= min(w.lane.PollInterval, expressListEvery) {
		listed, err := w.listQuiet(ctx, p)
		if err != nil {
			return nil, err
		}
		x.listed = now
		for _, t := range listed {
			if !slices.Contains(tenants, t) {
				tenants = append(tenants, t)
			}
		}
	}
	var recs []store.Record
	for _, tenant := range w.busy.notBusy(tenants) {
		tp := p
		tp.Tenant, tp.Limit = tenant, min(expressShare, p.Limit)
		got, err := w.store.Claim(ctx, tp)
		if err != nil {
			return partial(recs, err)
		}
		w.busy.saw(tenant, tp.Limit, len(got))
		x.served(tenant, len(got), len(got) < tp.Limit, now)
		recs = append(recs, got...)
	}
	return sortedByID(recs), nil
}

// listQuiet lists the lane's claimable tenants for the express worker,
// stepping over the busy ones where the store can (store.TenantSkipLister):
// on PostgreSQL a list that walks into a draining tenant's index range
// costs tens of milliseconds (see expressMemory), which a quiet tenant's
// event committed meanwhile waits out.
func (w *worker) listQuiet(ctx context.Context, p store.ClaimParams) ([]string, error) {
	if sl, ok := w.store.(store.TenantSkipLister); ok {
		return sl.ClaimableTenantsExcept(ctx, p.Scope, p.Limit, w.busy.names())
	}
	return w.store.ClaimableTenants(ctx, p.Scope, p.Limit)
}

// recentTenants lists the quiet tenants served within expressMemory,
// forgetting older ones.
func (x *expressState) recentTenants(now time.Time) []string {
	var ts []string
	for t, at := range x.recent {
		if now.Sub(at) > expressMemory {
			delete(x.recent, t)
			continue
		}
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// servedLately reports whether a quiet tenant was served within
// expressMemory.
func (x *expressState) servedLately(now time.Time) bool {
	for _, at := range x.recent {
		if now.Sub(at) <= expressMemory {
			return true
		}
	}
	return false
}

// served notes a claim for tenant that got got rows; a quiet one that got
// some is remembered.
func (x *expressState) served(tenant string, got int, quiet bool, now time.Time) {
	if got == 0 || !quiet {
		return
	}
	if x.recent == nil {
		x.recent = map[string]time.Time{}
	}
	x.recent[tenant] = now
}
