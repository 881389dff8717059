// Package admin is Herald's operations endpoint: Prometheus metrics of the
// relay and of each lane's outbox rows, and liveness and readiness checks,
// served over HTTP by `herald run` on the config's admin.addr.
//
//	GET /metrics  Prometheus text format
//	GET /healthz  200 while the process serves
//	GET /readyz   200 when the store answers, 503 with the error otherwise
package admin
