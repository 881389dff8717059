package admin

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/relay"
)

// Option configures Listen.
type Option func(*options)

type options struct {
	health         *relay.Health
	token          string
	metrics        *Metrics
	seriesInterval time.Duration
}

// WithMetrics feeds the lane charts' rates from the relay's counters.
func WithMetrics(m *Metrics) Option { return func(o *options) { o.metrics = m } }

// WithSeriesInterval sets how often the lane charts get a point (15 s by
// default; an hour of points is kept).
func WithSeriesInterval(d time.Duration) Option { return func(o *options) { o.seriesInterval = d } }

// WithHealth makes /readyz answer 503 while the relay reports a broker or
// its database unreachable, naming which.
func WithHealth(h *relay.Health) Option { return func(o *options) { o.health = h } }

// RegisterHealth registers the brokers' state gauges, read from h at
// scrape time: herald_broker_up{broker} (1 up, 0 unreachable) and
// herald_broker_outage_seconds_total{broker}, how long the broker has been
// unreachable since the relay started.
func RegisterHealth(reg prometheus.Registerer, h *relay.Health) error {
	return reg.Register(&brokerHealth{h: h,
		up: prometheus.NewDesc("herald_broker_up",
			"1 while the relay can reach the broker, 0 while its breaker is open (its lanes claim nothing).",
			[]string{"broker"}, nil),
		outage: prometheus.NewDesc("herald_broker_outage_seconds_total",
			"Seconds the broker has been unreachable since the relay started, the current outage included.",
			[]string{"broker"}, nil),
		storeUp: prometheus.NewDesc("herald_store_up",
			"1 while the relay's claims succeed, 0 while the database is unreachable.", nil, nil),
	})
}

type brokerHealth struct {
	h                   *relay.Health
	up, outage, storeUp *prometheus.Desc
}

func (c *brokerHealth) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.outage
	ch <- c.storeUp
}

func (c *brokerHealth) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.h.Brokers() {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, boolValue(b.Up), b.Broker)
		ch <- prometheus.MustNewConstMetric(c.outage, prometheus.CounterValue, b.OutageTotal.Seconds(), b.Broker)
	}
	ch <- prometheus.MustNewConstMetric(c.storeUp, prometheus.GaugeValue, boolValue(c.h.Store().Up))
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
