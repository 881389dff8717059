package admin

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// projectionCounters count what this process's projectors did; Metrics is
// their projector.Observer.
type projectionCounters struct {
	applied, failed *prometheus.CounterVec
}

func newProjectionCounters() projectionCounters {
	return projectionCounters{
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_projection_applied_total",
			Help: "Events this process's projectors applied to their read model, by projection.",
		}, []string{"projection"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_projection_failed_total",
			Help: "Failed attempts of this process's projectors to apply an event (handler errors), by projection; outcome dead counts those that made the event dead, retry the others.",
		}, []string{"projection", "outcome"}),
	}
}

// ProjectionApplied implements projector.Observer.
func (m *Metrics) ProjectionApplied(projection string, n int) {
	m.projCounts.applied.WithLabelValues(projection).Add(float64(n))
}

// ProjectionFailed implements projector.Observer.
func (m *Metrics) ProjectionFailed(projection string, dead bool) {
	outcome := "retry"
	if dead {
		outcome = "dead"
	}
	m.projCounts.failed.WithLabelValues(projection, outcome).Inc()
}

// projectionRows collects each configured projection's ledger rows and lag,
// read from its store at scrape time (so they are the database's, across
// every process). A projection whose read fails is left out of that scrape
// and counted in herald_projection_stats_errors_total.
type projectionRows struct {
	stores                  []StoreLanes
	rows, dead, behind, lag *prometheus.Desc
	errs                    *prometheus.CounterVec
}

func newProjectionRows(stores []StoreLanes) *projectionRows {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append([]string{"projection"}, labels...), nil)
	}
	return &projectionRows{stores: stores,
		rows: desc("herald_projection_events",
			"A projection's ledger rows by state (processing, failed, done, dead).", "state"),
		dead: desc("herald_projection_dead",
			"Events a projection gave up on (dead ledger rows): its read model misses them until they are replayed (herald projection replay NAME --dead)."),
		behind: desc("herald_projection_events_behind",
			"Outbox events a projection with an outbox source has not finished (done or dead), counted up to 1000."),
		lag: desc("herald_projection_lag_seconds",
			"Lag of a projection with an outbox source: the age of the oldest outbox event it has not finished, on the database clock (0 when none)."),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_projection_stats_errors_total",
			Help: "Scrapes whose read of a projection's ledger or outbox failed.",
		}, []string{"projection"}),
	}
}

func (c *projectionRows) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.rows, c.dead, c.behind, c.lag} {
		ch <- d
	}
	c.errs.Describe(ch)
}

func (c *projectionRows) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	for _, s := range c.stores {
		st, err := s.open()
		if err != nil || len(s.Projections) == 0 {
			continue // not open yet: herald_store_up says so
		}
		for _, ref := range s.Projections {
			p, err := ReadProjection(ctx, st, s.Name, ref)
			if err != nil {
				c.errs.WithLabelValues(ref.Name).Inc()
				continue
			}
			gauge := func(d *prometheus.Desc, v float64, labels ...string) {
				ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{p.Name}, labels...)...)
			}
			for state, n := range map[string]int64{"processing": p.Processing, "failed": p.Failed, "done": p.Done, "dead": p.Dead} {
				gauge(c.rows, float64(n), state)
			}
			gauge(c.dead, float64(p.Dead))
			if p.Behind >= 0 {
				gauge(c.behind, float64(p.Behind))
				gauge(c.lag, p.LagSeconds)
			}
		}
	}
	c.errs.Collect(ch)
}
