package cli

import (
	"strings"
	"testing"
)

// Rule: `herald run` refuses at start, with exit 2, an
// OTEL_EXPORTER_OTLP_PROTOCOL it cannot export with, naming the variable
// and the protocols there are (it exported over HTTP silently before).
func TestRunRefusesAnUnknownOTLPProtocol(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "")
	code, out := runChildSync(t, dir, "run", "--config", cfg)
	if code != ExitUsage || !strings.Contains(out, `OTEL_EXPORTER_OTLP_PROTOCOL: "http/json"`) ||
		!strings.Contains(out, "use grpc or http/protobuf") {
		t.Fatalf("herald run with OTEL_EXPORTER_OTLP_PROTOCOL=http/json: exit %d (want %d):\n%s", code, ExitUsage, out)
	}
}
