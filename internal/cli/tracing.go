package cli

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/config"
)

// startTracing exports the relay's spans to the config's OTLP/HTTP
// endpoint. It returns the tracer provider (nil when tracing is off, so the
// relay falls back to the global one) and a stop that flushes what is
// buffered.
func (a *app) startTracing(ctx context.Context, t config.Tracing) (trace.TracerProvider, func(), error) {
	if t.OTLPEndpoint == "" {
		return nil, func() {}, nil
	}
	endpoint := tracesURL(t.OTLPEndpoint)
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, nil, fmt.Errorf("tracing.otlp_endpoint: %w", err)
	}
	ratio := 1.0
	if t.SampleRatio != nil {
		ratio = *t.SampleRatio
	}
	name := t.ServiceName
	if name == "" {
		name = "herald"
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", name))))
	a.say("tracing to %s", endpoint)
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx)
	}
	return tp, stop, nil
}

// tracesURL adds OTLP's /v1/traces to an endpoint given without a path.
func tracesURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Path != "" && u.Path != "/") {
		return endpoint
	}
	u.Path = "/v1/traces"
	return u.String()
}
