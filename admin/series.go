package admin

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// seriesSpan is how far back the lane charts go.
const seriesSpan = time.Hour

// defaultSeriesInterval is how often the charts get a point.
const defaultSeriesInterval = 15 * time.Second

// Point is one sample of a lane's chart: its delivery and dead rates over
// the interval before At (this process's relay counters) and its lag then
// (the database's).
type Point struct {
	At         time.Time `json:"t"`
	Rate       float64   `json:"rate"`
	DeadRate   float64   `json:"dead_rate"`
	LagSeconds float64   `json:"lag_seconds"`
}

// laneCounts are one lane's running totals, kept by Metrics for the charts.
type laneCounts struct{ delivered, dead atomic.Int64 }

// series keeps the last hour of points per lane, in memory: no external
// service, and a restarted relay starts its charts afresh.
type series struct {
	stores   []StoreLanes
	metrics  *Metrics // nil: rates are 0
	interval time.Duration

	mu     sync.Mutex
	points map[string][]Point
	last   map[string][2]int64
	lastAt time.Time
}

func newSeries(stores []StoreLanes, m *Metrics, interval time.Duration) *series {
	if interval <= 0 {
		interval = defaultSeriesInterval
	}
	return &series{stores: stores, metrics: m, interval: interval,
		points: map[string][]Point{}, last: map[string][2]int64{}}
}

// run samples every interval until ctx ends.
func (s *series) run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		s.sample(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample adds a point per lane at now.
func (s *series) sample(ctx context.Context, now time.Time) {
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	lags := map[string]float64{}
	for _, l := range eachLane(s.stores) {
		if l.st == nil {
			continue // not open yet
		}
		if st, err := l.st.Stats(ctx, l.Scope()); err == nil {
			lags[l.Name] = st.OldestPendingAge.Seconds()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	elapsed := now.Sub(s.lastAt).Seconds()
	for _, l := range eachLane(s.stores) {
		totals := s.metrics.totals(l.Name)
		prev, seen := s.last[l.Name]
		s.last[l.Name] = totals
		if !seen || elapsed <= 0 {
			continue // a rate needs two samples: the first one only starts the count
		}
		p := Point{At: now.UTC(), LagSeconds: lags[l.Name],
			Rate:     float64(totals[0]-prev[0]) / elapsed,
			DeadRate: float64(totals[1]-prev[1]) / elapsed}
		pts := append(s.points[l.Name], p)
		for len(pts) > 0 && now.Sub(pts[0].At) > seriesSpan {
			pts = pts[1:]
		}
		s.points[l.Name] = pts
	}
	s.lastAt = now
}

// SeriesReport is GET /api/lanes/{lane}/series: the lane's last hour.
type SeriesReport struct {
	IntervalSeconds float64 `json:"interval_seconds"`
	Points          []Point `json:"points"`
}

func (s *series) serve(a api) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		lane, ok := a.laneOf(w, r)
		if !ok {
			return
		}
		s.mu.Lock()
		pts := append([]Point{}, s.points[lane.Name]...)
		s.mu.Unlock()
		writeJSON(w, SeriesReport{IntervalSeconds: s.interval.Seconds(), Points: pts})
	}
}

// totals returns lane's delivered and dead counts so far (zero without
// metrics).
func (m *Metrics) totals(lane string) [2]int64 {
	if m == nil {
		return [2]int64{}
	}
	c := m.counts(lane)
	return [2]int64{c.delivered.Load(), c.dead.Load()}
}

// counts returns lane's running totals, made on first use.
func (m *Metrics) counts(lane string) *laneCounts {
	if c, ok := m.lanes.Load(lane); ok {
		return c.(*laneCounts)
	}
	c, _ := m.lanes.LoadOrStore(lane, &laneCounts{})
	return c.(*laneCounts)
}
