package admin

import (
	"sort"
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
// unreachable since the relay started, and herald_store_up.
func RegisterHealth(reg prometheus.Registerer, h *relay.Health) error {
	return RegisterStoresHealth(reg, single(nil, nil, h))
}

// RegisterStoresHealth is RegisterHealth over several stores' relays. A
// broker that several relays publish to is one series: up while every
// relay reaches it, its outage the longest any relay saw. With more than
// one store, herald_store_up has a store label (with one it has none, as
// it always had).
func RegisterStoresHealth(reg prometheus.Registerer, stores []StoreLanes) error {
	var storeLabels []string
	if len(stores) > 1 {
		storeLabels = []string{"store"}
	}
	return reg.Register(&brokerHealth{stores: stores,
		up: prometheus.NewDesc("herald_broker_up",
			"1 while the relay can reach the broker, 0 while its breaker is open (its lanes claim nothing).",
			[]string{"broker"}, nil),
		outage: prometheus.NewDesc("herald_broker_outage_seconds_total",
			"Seconds the broker has been unreachable since the relay started, the current outage included.",
			[]string{"broker"}, nil),
		storeUp: prometheus.NewDesc("herald_store_up",
			"1 while the relay's claims succeed, 0 while the database is unreachable (or not reached yet at start).", storeLabels, nil),
	})
}

type brokerHealth struct {
	stores              []StoreLanes
	up, outage, storeUp *prometheus.Desc
}

func (c *brokerHealth) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.outage
	ch <- c.storeUp
}

func (c *brokerHealth) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.brokers() {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, boolValue(b.Up), b.Broker)
		ch <- prometheus.MustNewConstMetric(c.outage, prometheus.CounterValue, b.OutageTotal.Seconds(), b.Broker)
	}
	for _, s := range c.stores {
		if s.Health == nil {
			continue
		}
		var labels []string
		if len(c.stores) > 1 {
			labels = []string{s.Name}
		}
		_, notOpen := s.open()
		ch <- prometheus.MustNewConstMetric(c.storeUp, prometheus.GaugeValue, boolValue(notOpen == nil && s.Health.Store().Up), labels...)
	}
}

// brokers merges the relays' views of each broker, by name, in name order.
func (c *brokerHealth) brokers() []relay.BrokerStatus {
	byName := map[string]relay.BrokerStatus{}
	var names []string
	for _, s := range c.stores {
		if s.Health == nil {
			continue
		}
		for _, b := range s.Health.Brokers() {
			seen, ok := byName[b.Broker]
			if !ok {
				names = append(names, b.Broker)
			} else {
				b.Up = b.Up && seen.Up
				b.OutageTotal = max(b.OutageTotal, seen.OutageTotal)
			}
			byName[b.Broker] = b
		}
	}
	sort.Strings(names)
	out := make([]relay.BrokerStatus, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	return out
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
