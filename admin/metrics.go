package admin

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// statsTimeout bounds the store reads of one scrape.
const statsTimeout = 3 * time.Second

// Metrics is a relay.Observer that counts what every worker pass did, and a
// collector that reads each lane's rows by state from the store when
// scraped (so the gauges are the database's, across every relay process).
type Metrics struct {
	events *prometheus.CounterVec
	steps  *prometheus.HistogramVec
	acks   *prometheus.HistogramVec
	rows   *laneRows
	// projCounts and projRows are the projections' metrics (projmetrics.go).
	projCounts projectionCounters
	projRows   *projectionRows
	// lanes holds each lane's *laneCounts, the totals the charts read.
	lanes sync.Map
}

// NewMetrics registers Herald's metrics for lanes on reg.
func NewMetrics(reg prometheus.Registerer, st store.Store, lanes []relay.Lane) (*Metrics, error) {
	return NewStoresMetrics(reg, single(st, lanes, nil))
}

// NewStoresMetrics is NewMetrics over the lanes of several stores (whose
// names are unique across them: the metrics name lanes, not stores).
func NewStoresMetrics(reg prometheus.Registerer, stores []StoreLanes) (*Metrics, error) {
	m := &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_relay_events_total",
			Help: "Events this process's workers handled, by lane and outcome (claimed, delivered, retried, dead, discarded, released, lost, duplicate; on log lanes also stranded: rows the log passed without settling, handed to the polling workers, and mark_gone: delivered rows deleted before their mark).",
		}, []string{"lane", "outcome"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_relay_step_seconds",
			Help:    "Duration of each step of a worker pass (claim, publish, mark), by lane.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 15), // 0.5 ms … 8 s
		}, []string{"lane", "step"}),
		acks: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_commit_to_ack_seconds",
			Help:    "Per delivered event, the time from when it became due (its commit, or its available_at when delayed or retried) to the broker's ack, by lane.",
			Buckets: commitToAckBuckets,
		}, []string{"lane"}),
		rows:       newLaneRows(stores),
		projCounts: newProjectionCounters(),
		projRows:   newProjectionRows(stores),
	}
	for _, c := range []prometheus.Collector{m.events, m.steps, m.acks, m.rows, m.projCounts.applied,
		m.projCounts.failed, m.projRows} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// commitToAckBuckets span a relay keeping up (milliseconds) to one that is
// minutes behind.
var commitToAckBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// BatchDone counts one worker pass.
func (m *Metrics) BatchDone(s relay.BatchStats) {
	for _, o := range [...]struct {
		name string
		n    int
	}{
		{"claimed", s.Claimed}, {"delivered", s.Delivered}, {"retried", s.Retried}, {"dead", s.Dead},
		{"discarded", s.Discarded}, {"released", s.Released}, {"lost", s.Lost}, {"duplicate", s.Duplicates},
		{"stranded", s.Stranded}, {"mark_gone", s.MarksGone},
	} {
		m.events.WithLabelValues(s.Lane, o.name).Add(float64(o.n))
	}
	c := m.counts(s.Lane)
	c.delivered.Add(int64(s.Delivered))
	c.dead.Add(int64(s.Dead))
	if s.Claimed == 0 {
		return // a log lane's marks or stray check: no pass to time
	}
	m.steps.WithLabelValues(s.Lane, "claim").Observe(s.Claim.Seconds())
	m.steps.WithLabelValues(s.Lane, "publish").Observe(s.Publish.Seconds())
	m.steps.WithLabelValues(s.Lane, "mark").Observe(s.Mark.Seconds())
	if len(s.CommitToAck) > 0 {
		acks := m.acks.WithLabelValues(s.Lane)
		for _, d := range s.CommitToAck {
			acks.Observe(d.Seconds())
		}
	}
}

// laneRows collects each lane's rows by state, read from the store at
// scrape time. A lane whose read fails is left out of that scrape and
// counted in herald_outbox_stats_errors_total.
type laneRows struct {
	stores []StoreLanes
	rows   *prometheus.Desc
	oldest *prometheus.Desc
	errs   *prometheus.CounterVec
}

func newLaneRows(stores []StoreLanes) *laneRows {
	return &laneRows{stores: stores,
		rows: prometheus.NewDesc("herald_outbox_events",
			"Events in a lane's scope of its outbox table, by state (pending, retrying, in_flight, delivered, dead).",
			[]string{"lane", "table", "state"}, nil),
		oldest: prometheus.NewDesc("herald_outbox_oldest_pending_age_seconds",
			"Lag of a lane: how long its pending event due the longest has waited since it became due (available_at), on the database clock (0 when none is due).",
			[]string{"lane", "table"}, nil),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_outbox_stats_errors_total",
			Help: "Scrapes whose read of a lane's rows failed.",
		}, []string{"lane"}),
	}
}

func (c *laneRows) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.rows
	ch <- c.oldest
	c.errs.Describe(ch)
}

func (c *laneRows) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	for _, l := range eachLane(c.stores) {
		if l.st == nil {
			continue // not open yet: herald_store_up says so
		}
		st, err := l.st.Stats(ctx, l.Scope())
		if err != nil {
			c.errs.WithLabelValues(l.Name).Inc()
			continue
		}
		for state, n := range map[string]int64{"pending": st.Pending, "retrying": st.Retrying,
			"in_flight": st.InFlight, "delivered": st.Delivered, "dead": st.Dead} {
			ch <- prometheus.MustNewConstMetric(c.rows, prometheus.GaugeValue, float64(n), l.Name, l.Table, state)
		}
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, st.OldestPendingAge.Seconds(), l.Name, l.Table)
	}
	c.errs.Collect(ch)
}
