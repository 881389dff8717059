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
	log      *slog.Logger
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
// is down and for the database when claims fail; empty when ready.
func (h *Health) Unready() []string {
	var why []string
	if s := h.Store(); !s.Up {
		why = append(why, fmt.Sprintf("database unreachable since %s: %s", s.Since.UTC().Format(time.RFC3339), s.Error))
	}
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

// storeOK records a successful claim, logging the recovery after an outage.
func (h *Health) storeOK() {
	h.mu.Lock()
	if h.store.Up {
		h.mu.Unlock()
		return
	}
	outage := time.Since(h.store.Since)
	h.store = StoreStatus{Up: true, Since: time.Now()}
	log := h.log
	h.mu.Unlock()
	log.Info("database recovered", slog.Duration("outage", outage.Round(time.Millisecond)))
}

func (h *Health) setLogger(l *slog.Logger) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = l
}
