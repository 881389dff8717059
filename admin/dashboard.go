package admin

import (
	_ "embed"
	"net/http"
)

// dashboard is the web page at /: every lane's rows by state, each table's
// rows that no lane selects, and a lane's dead letters, refreshed every 2 s
// from the JSON API. One self-contained file, no external assets, so it
// works offline and behind any proxy.
//
//go:embed dashboard.html
var dashboard []byte

func serveDashboard(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The page builds everything from the API with textContent; it needs
	// no inline event attributes or foreign origins.
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	_, _ = w.Write(dashboard)
}
