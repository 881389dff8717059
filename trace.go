package herald

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/propagation"
)

// withTraceContext returns headers plus the W3C trace context (traceparent,
// tracestate) of ctx's span, if it has a valid one. The caller's map is not
// modified; headers the caller set win.
func withTraceContext(ctx context.Context, headers map[string]string) map[string]string {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return headers
	}
	out := make(map[string]string, len(headers)+len(carrier))
	maps.Copy(out, carrier)
	maps.Copy(out, headers)
	return out
}
