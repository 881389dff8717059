package relay

import (
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// BrokerStatus is what a relay knows of one broker connection.
type BrokerStatus struct {
	// Broker names the connection (Lane.Broker, or the lane's name).
	Broker string
	// Lanes are the lanes publishing through it.
	Lanes []string
	// Up is false while the broker is taken to be unreachable: its lanes
	// claim nothing and probe it.
	Up bool
	// Since is when the current state began.
	Since time.Time
	// Error is the error that opened the current outage ("" when up).
	Error string
	// OutageTotal is how long the broker has been unreachable since the
	// relay started, the current outage included.
	OutageTotal time.Duration
}

// StoreStatus is what a relay knows of its database.
type StoreStatus struct {
	Up    bool
	Since time.Time
	Error string
}

// Health is a relay's view of its brokers and its database, for readiness
// checks, metrics and status. Make one with NewHealth and pass it in
// Config.Health to read it from elsewhere (the admin server); a relay
// without one keeps its own. It is safe for concurrent use.
type Health struct {
	mu       sync.Mutex
	breakers []*breaker
	store    StoreStatus
	// tables holds, by lane, why the lane's table cannot be read as this
	// build reads it (store.ErrSchema), while its claims fail for that.
	tables map[string]string
	log    *slog.Logger
}

// NewHealth returns an empty Health: no brokers, the database up.
func NewHealth() *Health {
	return &Health{store: StoreStatus{Up: true, Since: time.Now()}, log: slog.Default()}
}

func (h *Health) add(b *breaker) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.breakers = append(h.breakers, b)
}

// Brokers returns every broker connection's status, by name.
func (h *Health) Brokers() []BrokerStatus {
	h.mu.Lock()
	bs := append([]*breaker(nil), h.breakers...)
	h.mu.Unlock()
	out := make([]BrokerStatus, len(bs))
	for i, b := range bs {
		out[i] = b.status()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Broker < out[j].Broker })
	return out
}

// Store returns the database's status as the relay's claims see it.
func (h *Health) Store() StoreStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.store
}

// Unready returns why the relay cannot relay now: one line per broker that
// is down, for the database when claims fail, and per lane whose table is
// not as this build reads it (saying what fixes it); empty when ready.
func (h *Health) Unready() []string {
	var why []string
	if s := h.Store(); !s.Up {
		why = append(why, fmt.Sprintf("database unreachable since %s: %s", s.Since.UTC().Format(time.RFC3339), s.Error))
	}
	why = append(why, h.tableProblems()...)
	for _, b := range h.Brokers() {
		if !b.Up {
			why = append(why, fmt.Sprintf("broker %s unreachable since %s (lanes %v): %s",
				b.Broker, b.Since.UTC().Format(time.RFC3339), b.Lanes, b.Error))
		}
	}
	return why
}

// storeFailed records a failed claim: the first one after success logs the
// database as unreachable, later ones are silent until it recovers.
func (h *Health) storeFailed(err error) {
	h.mu.Lock()
	if !h.store.Up {
		h.mu.Unlock()
		return
	}
	h.store = StoreStatus{Up: false, Since: time.Now(), Error: err.Error()}
	log := h.log
	h.mu.Unlock()
	log.Error("database unreachable: claims fail; the relay keeps trying", slog.String("error", err.Error()))
}

// storeOK records a successful claim of lane, logging the recovery after
// an outage of the database or of the lane's table.
func (h *Health) storeOK(lane string) {
	h.mu.Lock()
	_, tableDown := h.tables[lane]
	if h.store.Up && !tableDown {
		h.mu.Unlock()
		return
	}
	delete(h.tables, lane)
	wasUp, since := h.store.Up, h.store.Since
	if !wasUp {
		h.store = StoreStatus{Up: true, Since: time.Now()}
	}
	log := h.log
	h.mu.Unlock()
	if tableDown {
		log.Info("the lane's table is readable again", slog.String("lane", lane))
	}
	if !wasUp {
		log.Info("database recovered", slog.Duration("outage", time.Since(since).Round(time.Millisecond)))
	}
}

// tableFailed records a claim of lane that failed because its table is
// not as this build reads it (err wraps store.ErrSchema): the database
// answers, the lane does not relay. The first such failure logs.
func (h *Health) tableFailed(lane string, err error) {
	h.mu.Lock()
	if h.tables == nil {
		h.tables = map[string]string{}
	}
	_, known := h.tables[lane]
	h.tables[lane] = err.Error()
	log := h.log
	h.mu.Unlock()
	if !known {
		log.Error("the lane's table is not as this build reads it; the relay keeps trying",
			slog.String("lane", lane), slog.String("error", err.Error()))
	}
}

// tableProblems is a line per lane whose table is not as this build reads
// it, by lane name.
func (h *Health) tableProblems() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	lanes := make([]string, 0, len(h.tables))
	for l := range h.tables {
		lanes = append(lanes, l)
	}
	sort.Strings(lanes)
	why := make([]string, len(lanes))
	for i, l := range lanes {
		why[i] = fmt.Sprintf("lane %s: %s", l, h.tables[l])
	}
	return why
}

func (h *Health) setLogger(l *slog.Logger) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = l
}
