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
	// projLag is each outbox-sourced projection's lag over the last hour.
	projLag map[string][]Point
	last    map[string][2]int64
	lastAt  time.Time
}

func newSeries(stores []StoreLanes, m *Metrics, interval time.Duration) *series {
	if interval <= 0 {
		interval = defaultSeriesInterval
	}
	return &series{stores: stores, metrics: m, interval: interval,
		points: map[string][]Point{}, projLag: map[string][]Point{}, last: map[string][2]int64{}}
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
	s.sampleProjections(ctx, now)
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
		s.points[l.Name] = lastHour(append(s.points[l.Name], p), now)
	}
	s.lastAt = now
}

// lastHour drops the points older than seriesSpan.
func lastHour(pts []Point, now time.Time) []Point {
	for len(pts) > 0 && now.Sub(pts[0].At) > seriesSpan {
		pts = pts[1:]
	}
	return pts
}

// sampleProjections adds a lag point per projection with an outbox
// source (a broker source's backlog only the broker knows).
func (s *series) sampleProjections(ctx context.Context, now time.Time) {
	for _, sl := range s.stores {
		st, err := sl.open()
		if err != nil {
			continue // not open yet
		}
		for _, ref := range sl.Projections {
			if ref.Outbox.Table == "" {
				continue
			}
			p, err := ReadProjection(ctx, st, sl.Name, ref)
			if err != nil {
				continue // the overview and metrics say why
			}
			s.mu.Lock()
			s.projLag[ref.Name] = lastHour(append(s.projLag[ref.Name], Point{At: now.UTC(), LagSeconds: p.LagSeconds}), now)
			s.mu.Unlock()
		}
	}
}

// SeriesReport is GET /api/lanes/{lane}/series: the lane's last hour.
type SeriesReport struct {
	IntervalSeconds float64 `json:"interval_seconds"`
	Points          []Point `json:"points"`
}

func (s *series) serve(a api) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if lane, ok := a.laneOf(w, r); ok {
			s.write(w, s.points, lane.Name)
		}
	}
}

// serveProjection answers GET /api/projections/{projection}/series: the
// projection's lag over the last hour (no points for a broker source).
func (s *series) serveProjection(a api) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if p, ok := a.openProjection(w, r); ok {
			s.write(w, s.projLag, p.Name)
		}
	}
}

// write answers with a copy of the points of name in m.
func (s *series) write(w http.ResponseWriter, m map[string][]Point, name string) {
	s.mu.Lock()
	pts := append([]Point{}, m[name]...)
	s.mu.Unlock()
	writeJSON(w, SeriesReport{IntervalSeconds: s.interval.Seconds(), Points: pts})
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
