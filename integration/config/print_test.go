package config

import (
	"errors"
	. "github.com/heraldhq/herald/config"
	"strings"
	"testing"
)

// clearOTEL unsets, for the test, the OpenTelemetry variables that change
// the tracing section's defaults.
func clearOTEL(t *testing.T) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(v, "")
	}
}

// Rule: `herald config print` shows the effective value of the keys that
// defaults fill (it printed node: "", log.level: "", sample_ratio: null
// and the embedded NATS server's URL as nats://127.0.0.1:4222 before), and
// says what decides the values only a process or a variable knows.
func TestPrintShowsEffectiveValues(t *testing.T) {
	clearOTEL(t)
	out, err := Defaults(testDrivers).Print()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`node: "" # default: the host name and process id`, "    level: info\n", "    format: text\n",
		"    sample_ratio: 1\n", "    service_name: herald\n", "    protocol: http/protobuf\n",
		`otlp_endpoint: "" # tracing off`, "        url: nats://127.0.0.1:4233\n", "        source: herald\n",
		"    synchronous: full\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("printed defaults lack %q:\n%s", want, out)
		}
	}

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:s3cret@127.0.0.1:4317")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_SERVICE_NAME", "billing-relay")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	out, err = Defaults(testDrivers).Print()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`otlp_endpoint: "" # tracing to http://collector:xxxxx@127.0.0.1:4317, from OTEL_EXPORTER_OTLP_ENDPOINT`,
		"protocol: grpc # from OTEL_EXPORTER_OTLP_PROTOCOL", "service_name: billing-relay # from OTEL_SERVICE_NAME",
		"sample_ratio: null # OTEL_TRACES_SAMPLER"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("printed config with OTEL_* set lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "s3cret") {
		t.Errorf("printed config shows the endpoint's password:\n%s", out)
	}
}

// Rule: an OTLP protocol variable Herald cannot export with is refused,
// naming the variable and the protocols there are, when tracing is on and
// tracing.protocol does not override it; it is ignored when tracing is off.
func TestUnknownOTLPProtocolIsRefused(t *testing.T) {
	clearOTEL(t)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	const on = "tracing: {otlp_endpoint: \"http://127.0.0.1:4318\"}\n"
	if _, err := parse(nil, "t.yaml"); err != nil {
		t.Errorf("with tracing off: %v", err)
	}
	_, err := parse([]byte(on), "t.yaml")
	if want := `OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" is not a protocol Herald exports traces with: use grpc or http/protobuf`; !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want ErrInvalid saying %s", err, want)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "udp")
	if _, err := parse([]byte(on), "t.yaml"); err == nil || !strings.Contains(err.Error(), `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "udp"`) {
		t.Errorf("err = %v, want it to name the traces variable, which comes first", err)
	}
	if f, err := parse([]byte("tracing: {otlp_endpoint: \"http://127.0.0.1:4318\", protocol: grpc}\n"), "t.yaml"); err != nil ||
		f.Tracing.WithDefaults().Protocol != ProtocolGRPC {
		t.Errorf("tracing.protocol over a bad variable: %v", err)
	}
}
