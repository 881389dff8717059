package config

import (
	"fmt"
	"os"
)

// The OTLP protocols `herald run` exports spans with.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// WithDefaults returns a copy of t with every default applied, as `herald
// run` exports with it and `herald config print` shows it: ServiceName
// from OTEL_SERVICE_NAME, else herald; Protocol from
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL, else
// http/protobuf; SampleRatio 1 unless OTEL_TRACES_SAMPLER is set (then it
// stays nil and the OpenTelemetry SDK reads the variable). OTLPEndpoint is
// kept: without one the exporter reads OTEL_EXPORTER_OTLP_* itself
// (EndpointFromEnv).
func (t Tracing) WithDefaults() Tracing {
	if t.ServiceName == "" {
		t.ServiceName = firstEnv("OTEL_SERVICE_NAME")
	}
	if t.ServiceName == "" {
		t.ServiceName = "herald"
	}
	if t.Protocol == "" {
		_, t.Protocol = envProtocol()
	}
	if t.Protocol == "" {
		t.Protocol = ProtocolHTTP
	}
	if t.SampleRatio == nil && os.Getenv("OTEL_TRACES_SAMPLER") == "" {
		one := 1.0
		t.SampleRatio = &one
	}
	return t
}

// EndpointFromEnv returns the OTLP endpoint the OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// or OTEL_EXPORTER_OTLP_ENDPOINT variable sets and the variable's name;
// "" when neither is set.
func EndpointFromEnv() (name, endpoint string) {
	return firstSet("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
}

// envProtocol returns the protocol variable that is set and its value.
func envProtocol() (name, protocol string) {
	return firstSet("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
}

// validateEnv refuses an OTLP protocol variable Herald cannot export with
// (http/json among them) when tracing is on and tracing.protocol does not
// override it: the exporter would otherwise fall back to HTTP silently.
func (t Tracing) validateEnv() error {
	if _, endpoint := EndpointFromEnv(); t.Protocol != "" || (t.OTLPEndpoint == "" && endpoint == "") {
		return nil
	}
	name, p := envProtocol()
	if p == "" || p == ProtocolHTTP || p == ProtocolGRPC {
		return nil
	}
	return fmt.Errorf("%s: %q is not a protocol Herald exports traces with: use %s or %s", name, p, ProtocolGRPC, ProtocolHTTP)
}

// firstSet returns the first of the variables that is set, and its value.
func firstSet(names ...string) (name, value string) {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return n, v
		}
	}
	return "", ""
}

// firstEnv returns the value of the first of the variables that is set.
func firstEnv(names ...string) string {
	_, v := firstSet(names...)
	return v
}
