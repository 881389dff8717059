package relay

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/store"
)

// Fair lanes (Lane.FairTenants).
//
// A claim takes a lane's rows oldest first, so a tenant that committed a
// large backlog fills every batch until its backlog is gone, and another
// tenant's new event waits behind all of it: its latency becomes the
// backlog's drain time. A fair lane first asks the store which named
// tenants have claimable rows (store.TenantLister: an index dive per
// tenant), and when there are two or more it claims each one's share of
// the batch with a tenant-scoped claim under the batch's one fencing token:
// an equal share each, a tenant that has fewer rows leaving the rest to
// the tenants after it, which are taken in the order of what they got last
// time (smallest first) so the big ones come last and take what is left.
// Rows of the default tenant, and whatever the named tenants cannot fill,
// come from one more claim of the whole lane. A tenant with ready rows so
// waits at most one claim, whatever the others' backlogs.
//
// With one claimable tenant the claim is the plain one: the cost of
// fairness for a lane that has only one tenant busy is the tenant query.
// A fair lane also has an express worker for its quiet tenants (express.go).

// fairShares remembers, per tenant, how many rows the worker's last fair
// claim got: the order in which the next claim serves them.
type fairShares map[string]int

// claimRows claims one batch: the plain claim, or for a fair lane (not
// when probing the broker with one row) the tenants' shares.
func (w *worker) claimRows(ctx context.Context, p store.ClaimParams, probe bool) ([]store.Record, error) {
	if !w.lane.FairTenants || probe {
		return w.store.Claim(ctx, p)
	}
	if w.express {
		return w.claimExpress(ctx, p)
	}
	tenants, err := w.fairTenants(ctx, p)
	if err != nil {
		return nil, err
	}
	if tenants = w.busy.notQuiet(tenants); len(tenants) < 2 {
		return w.claimPlain(ctx, p, tenants)
	}
	if w.fair == nil {
		w.fair = fairShares{}
	}
	last := w.fair
	slices.SortStableFunc(tenants, func(a, b string) int { return cmp.Compare(last[a], last[b]) })
	w.fair = fairShares{}
	var recs []store.Record
	for i, tenant := range tenants {
		left := p.Limit - len(recs)
		if left <= 0 {
			break
		}
		tp := p
		tp.Tenant, tp.Limit = tenant, max(1, left/(len(tenants)-i))
		got, err := w.store.Claim(ctx, tp)
		if err != nil {
			return partial(recs, err)
		}
		w.fair[tenant] = len(got)
		w.busy.saw(tenant, tp.Limit, len(got))
		recs = append(recs, got...)
	}
	if left := p.Limit - len(recs); left > 0 {
		rest := p
		rest.Limit = left
		got, err := w.store.Claim(ctx, rest)
		if err != nil {
			return partial(recs, err)
		}
		recs = append(recs, got...)
	}
	return sortedByID(recs), nil
}

// fairListEvery is how long a worker's tenant list serves its fair claims
// before it lists again. Listing before every batch is one more query per
// batch, and on PostgreSQL a slow one during a drain (its index dive walks
// the entries the drain leaves dead until vacuum; see expressMemory); a
// tenant that turns up between lists gets its share at most this much
// later, and the express worker serves quiet ones.
const fairListEvery = 50 * time.Millisecond

// fairTenants is the lane's named tenants with claimable rows, as listed
// within fairListEvery.
func (w *worker) fairTenants(ctx context.Context, p store.ClaimParams) ([]string, error) {
	if now := time.Now(); now.Sub(w.fairListed) >= fairListEvery {
		tenants, err := w.store.ClaimableTenants(ctx, p.Scope, p.Limit)
		if err != nil {
			return nil, err
		}
		w.fairList, w.fairListed = tenants, now
	}
	return slices.Clone(w.fairList), nil
}

// claimPlain is a fair lane's claim when at most one named tenant has
// claimable rows: the plain claim. That tenant is busy (for the express
// worker) when the batch came back full of its rows alone.
func (w *worker) claimPlain(ctx context.Context, p store.ClaimParams, tenants []string) ([]store.Record, error) {
	recs, err := w.store.Claim(ctx, p)
	if err == nil && len(tenants) == 1 {
		all := !slices.ContainsFunc(recs, func(r store.Record) bool { return r.Event.Tenant != tenants[0] })
		if all {
			w.busy.saw(tenants[0], p.Limit, len(recs))
		} else {
			w.busy.saw(tenants[0], p.Limit, 0)
		}
	}
	return recs, err
}

// sortedByID puts a batch claimed in parts back in commit order.
func sortedByID(recs []store.Record) []store.Record {
	slices.SortFunc(recs, func(a, b store.Record) int { return cmp.Compare(a.ID, b.ID) })
	return recs
}

// partial is the outcome of a fair claim that failed after some tenants'
// claims went through: their rows are held under the batch's token, so
// they are published rather than left to their lease; the error shows on
// the next claim if it persists.
func partial(recs []store.Record, err error) ([]store.Record, error) {
	if len(recs) == 0 {
		return nil, err
	}
	return sortedByID(recs), nil
}
