package admin

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// DefaultStore names the only store of Listen and NewMetrics, as
// config.DefaultStore names a config file's `store`.
const DefaultStore = "default"

// StoreLanes is one database and the lanes relayed from it, for
// ListenStores, NewStoresMetrics and RegisterStoresHealth: `herald run`
// passes one per configured store. Lane names are unique across them.
type StoreLanes struct {
	// Name names the store in status, readiness and (with several
	// stores) the herald_store_up metric.
	Name  string
	Store store.Store
	Lanes []relay.Lane
	// Health, when set, is the store's relay's: /readyz answers 503 while
	// it reports a broker or the database unreachable.
	Health *relay.Health
	// Opening, when set, supplies the store once it opens; Store is not
	// read then. Until it opens, the store is reported awaited (Opening).
	Opening *Opening
	// Projections are the projections whose ledgers are in this store's
	// database, for status and metrics.
	Projections []ProjectionRef
}

// single is the one store of Listen and NewMetrics.
func single(st store.Store, lanes []relay.Lane, h *relay.Health) []StoreLanes {
	return []StoreLanes{{Name: DefaultStore, Store: st, Lanes: lanes, Health: h}}
}

// StoreStatus is the status of one store's lanes, as `herald status` and
// GET /api/lanes show it: each lane's rows by state (only tenant's when
// tenant is set), its pause and broker state, and the rows of each table
// that no lane selects. stateErr is why the lane state (pauses, brokers)
// is unknown, when it is: the counts stand without it.
func StoreStatus(ctx context.Context, s StoreLanes, tenant string) (report StatusReport, stateErr, err error) {
	st, err := s.open()
	if err != nil {
		return StatusReport{}, nil, err
	}
	report.Lanes = make([]LaneStatus, 0, len(s.Lanes))
	scopes := make([]store.Scope, 0, len(s.Lanes))
	for _, l := range s.Lanes {
		sc := l.Scope()
		scopes = append(scopes, sc)
		if tenant != "" {
			sc.Tenant = tenant
		}
		stats, err := st.Stats(ctx, sc)
		if err != nil {
			return StatusReport{}, nil, fmt.Errorf("lane %s: %w", l.Name, err)
		}
		ls := NewLaneStatus(l.Name, l.Table, stats)
		ls.Store = s.Name
		report.Lanes = append(report.Lanes, ls)
	}
	stateErr = AddLaneStates(ctx, st, report.Lanes)
	report.Unselected, err = Unselected(ctx, st, scopes, tenant)
	if err != nil {
		return StatusReport{}, nil, fmt.Errorf("store %s: %w", s.Name, err)
	}
	for i := range report.Unselected {
		report.Unselected[i].Store = s.Name
	}
	report.Projections = storeProjections(ctx, st, s)
	return report, stateErr, nil
}

// Add appends another store's status to r.
func (r *StatusReport) Add(other StatusReport) {
	if r.Lanes == nil {
		r.Lanes = []LaneStatus{}
	}
	if r.Unselected == nil {
		r.Unselected = []TableUnselected{}
	}
	r.Lanes = append(r.Lanes, other.Lanes...)
	r.Unselected = append(r.Unselected, other.Unselected...)
	r.Projections = append(r.Projections, other.Projections...)
}

// unready says why the relays cannot relay now: a store not open yet
// (Opening) or that does not answer a ping (the first such error per
// store), else what its relay's health reports. With several stores each
// line names its store.
func unready(ctx context.Context, stores []StoreLanes) []string {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	var why []string
	for _, s := range stores {
		prefix := ""
		if len(stores) > 1 {
			prefix = "store " + s.Name + ": "
		}
		st, err := s.open()
		if err != nil {
			why = append(why, err.Error()) // it names the store
			continue
		}
		if err := st.DB().PingContext(ctx); err != nil {
			why = append(why, prefix+"store unreachable: "+err.Error())
			continue
		}
		if s.Health != nil {
			for _, line := range s.Health.Unready() {
				why = append(why, prefix+line)
			}
		}
	}
	return why
}

// eachLane lists every store's lanes, each with its store (nil, with
// notOpen saying why, while the store is not open yet).
func eachLane(stores []StoreLanes) []laneRef {
	var out []laneRef
	for _, s := range stores {
		st, err := s.open()
		for _, l := range s.Lanes {
			out = append(out, laneRef{Lane: l, st: st, storeName: s.Name, notOpen: err})
		}
	}
	return out
}
