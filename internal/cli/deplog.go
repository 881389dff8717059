package cli

import (
	"log"
	"log/slog"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store"
)

// routeDependencyLogs sends what the libraries Herald links log to l, so
// that one format and level cover everything Herald prints:
//   - OpenTelemetry's errors (a failed span export among them) at WARN,
//     and its internal logger through l;
//   - the standard library's log package at WARN (libraries use it for
//     problems; vitess redirects it to a JSON logger of its own at init);
//   - the client libraries of the drivers that log by themselves
//     (store.LogRouter, broker.LogRouter).
//
// These loggers are process-wide: the last command's logger wins.
func (a *app) routeDependencyLogs(l *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		l.Warn("opentelemetry error", slog.Any("error", err))
	}))
	otel.SetLogger(logr.FromSlogHandler(l.Handler()))
	log.SetFlags(0)
	log.SetPrefix("")
	log.SetOutput(slog.NewLogLogger(l.Handler(), slog.LevelWarn).Writer())
	for _, d := range a.drivers.Stores {
		if r, ok := d.(store.LogRouter); ok {
			r.RouteLogs(l)
		}
	}
	for _, d := range a.drivers.Brokers {
		if r, ok := d.(broker.LogRouter); ok {
			r.RouteLogs(l)
		}
	}
}
