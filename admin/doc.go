// Package admin is Herald's operations endpoint: Prometheus metrics of the
// relay and of each lane's outbox rows, liveness and readiness checks, and
// a read-only JSON API of lanes and dead letters with a web dashboard,
// served over HTTP by `herald run` on the config's admin.addr.
//
//	GET /         the web dashboard
//	GET /metrics  Prometheus text format
//	GET /healthz  200 while the process serves
//	GET /readyz   200 when every store answers and its relay reaches its
//	              brokers, 503 with the reasons otherwise (each naming its
//	              store when there are several: ListenStores)
//	GET /api/lanes[?tenant=T]                    each lane's rows by state
//	GET /api/lanes/{lane}/dead[?after=ID&limit=N] dead events, a page at a time
package admin
