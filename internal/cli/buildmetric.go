package cli

import (
	"github.com/prometheus/client_golang/prometheus"
)

// buildInfoGauge is herald_build_info: always 1, with the version, VCS
// revision and Go version as labels, so dashboards can show which build
// each relay runs and alerts can join on it.
func buildInfoGauge() prometheus.Collector {
	b := readBuildInfo()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "herald_build_info",
		Help: "Always 1; the labels name the build this herald runs.",
		ConstLabels: prometheus.Labels{
			"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion,
		},
	})
	g.Set(1)
	return g
}
