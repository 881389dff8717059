package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// pingTimeout bounds the readiness check's store round trip.
const pingTimeout = 2 * time.Second

// Server serves the dashboard at /, /metrics, /healthz, /readyz and the
// API under /api/.
type Server struct {
	srv        *http.Server
	ln         net.Listener
	done       chan error
	stopCharts context.CancelFunc
	charts     chan struct{} // closed when the chart sampler has stopped
	series     *series
}

// Listen starts serving on addr (host:port; port 0 picks a free one) the
// metrics gathered by reg, the health of st (and of the relay, WithHealth),
// the dashboard and the API over lanes: read-only, with actions for callers
// that send the token of WithToken.
func Listen(addr string, reg prometheus.Gatherer, st store.Store, lanes []relay.Lane, opts ...Option) (*Server, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return ListenStores(addr, reg, single(st, lanes, o.health), opts...)
}

// ListenStores is Listen over several stores, each with its lanes and its
// relay's health (WithHealth is not used: each StoreLanes has its own).
func ListenStores(addr string, reg prometheus.Gatherer, stores []StoreLanes, opts ...Option) (*Server, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if why := unready(r.Context(), stores); len(why) > 0 {
			http.Error(w, strings.Join(why, "\n"), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	a := api{stores: stores, token: o.token}
	charts := newSeries(stores, o.metrics, o.seriesInterval)
	routes(mux, a, charts)
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln,
		done: make(chan error, 1), stopCharts: stop, charts: make(chan struct{}), series: charts}
	go func() { s.done <- s.srv.Serve(ln) }()
	go func() { defer close(s.charts); charts.run(ctx) }()
	return s, nil
}

// routes puts the dashboard's pages and the API on mux. Pages are one
// file that reads its path: /, /lanes/{lane}, /lanes/{lane}/events/{id},
// /projections/{projection}, /stores/{store}/tables/{table}/unselected.
func routes(mux *http.ServeMux, a api, charts *series) {
	mux.HandleFunc("GET /{$}", serveDashboard)
	mux.HandleFunc("GET /lanes/{lane}", serveDashboard)
	mux.HandleFunc("GET /lanes/{lane}/events/{id}", serveDashboard)
	mux.HandleFunc("GET /projections/{projection}", serveDashboard)
	mux.HandleFunc("GET /stores/{store}/tables/{table}/unselected", serveDashboard)
	mux.HandleFunc("GET /api/session", a.session)
	mux.HandleFunc("GET /api/lanes", a.lanesStatus)
	mux.HandleFunc("GET /api/lanes/{lane}/dead", a.deadList)
	mux.HandleFunc("GET /api/lanes/{lane}/events", a.events)
	mux.HandleFunc("GET /api/lanes/{lane}/events/{id}", a.event)
	mux.HandleFunc("GET /api/lanes/{lane}/series", charts.serve(a))
	mux.Handle("POST /api/lanes/{lane}/replay", action(a, a.replay))
	mux.Handle("POST /api/lanes/{lane}/purge", action(a, a.purge))
	mux.Handle("POST /api/lanes/{lane}/retry", action(a, a.retryNow))
	mux.Handle("POST /api/lanes/{lane}/pause", action(a, a.setPaused(true)))
	mux.Handle("POST /api/lanes/{lane}/resume", action(a, a.setPaused(false)))
	mux.HandleFunc("GET /api/projections/{projection}", a.projection)
	mux.HandleFunc("GET /api/stores/{store}/tables/{table}/unselected", a.unselectedRows)
	mux.HandleFunc("GET /api/projections/{projection}/series", charts.serveProjection(a))
	mux.Handle("POST /api/projections/{projection}/replay", projectionAction(a, a.replayProjection))
	mux.Handle("POST /api/projections/{projection}/rebuild", projectionAction(a, a.rebuildProjection))
}

// Addr is where the server listens, the chosen port included.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, letting requests in progress finish within ctx.
func (s *Server) Close(ctx context.Context) error {
	s.stopCharts()
	<-s.charts
	err := s.srv.Shutdown(ctx)
	if serveErr := <-s.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}
