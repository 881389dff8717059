package daemon

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/config"
)

// startTracing exports the relay's spans over OTLP: to tracing.otlp_endpoint,
// or where the standard OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variables say;
// over the protocol and with the service name and sampling of
// config.Tracing.WithDefaults. It returns the tracer provider (nil when
// tracing is off, so the relay falls back to the global one) and a stop
// that flushes what is buffered.
func startTracing(ctx context.Context, t config.Tracing, say func(string, ...any)) (trace.TracerProvider, func(), error) {
	_, fromEnv := config.EndpointFromEnv()
	if t.OTLPEndpoint == "" && fromEnv == "" {
		return nil, func() {}, nil
	}
	t = t.WithDefaults()
	exp, where, err := newExporter(ctx, t, fromEnv)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(tracingResource(t.ServiceName))}
	if t.SampleRatio != nil {
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*t.SampleRatio))))
	} // else the SDK reads OTEL_TRACES_SAMPLER(_ARG) itself
	tp := sdktrace.NewTracerProvider(opts...)
	say("tracing to %s", where)
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx)
	}
	return tp, stop, nil
}

// newExporter builds the OTLP exporter for t's protocol and says where it
// sends. Without a configured endpoint the exporter reads the
// OTEL_EXPORTER_OTLP_* variables itself (endpoint, headers, TLS, timeout).
func newExporter(ctx context.Context, t config.Tracing, fromEnv string) (sdktrace.SpanExporter, string, error) {
	endpoint := t.OTLPEndpoint
	if t.Protocol == config.ProtocolGRPC {
		var opts []otlptracegrpc.Option
		where := fromEnv + " (OTLP/gRPC)"
		if endpoint != "" {
			opts, where = append(opts, otlptracegrpc.WithEndpointURL(endpoint)), endpoint+" (OTLP/gRPC)"
		}
		exp, err := otlptracegrpc.New(ctx, opts...)
		return exp, where, err
	}
	var opts []otlptracehttp.Option
	where := fromEnv
	if endpoint != "" {
		where = tracesURL(endpoint)
		opts = append(opts, otlptracehttp.WithEndpointURL(where))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	return exp, where, err
}

// tracingResource names the service; OTEL_RESOURCE_ATTRIBUTES adds the
// rest.
func tracingResource(name string) *resource.Resource {
	env, _ := resource.New(context.Background(), resource.WithFromEnv())
	r, err := resource.Merge(env, resource.NewSchemaless(attribute.String("service.name", name)))
	if err != nil {
		return resource.NewSchemaless(attribute.String("service.name", name))
	}
	return r
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
