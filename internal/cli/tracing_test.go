package cli

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP traces endpoint that keeps span names.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []string
	errs  []string
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	o.mu.Lock()
	defer o.mu.Unlock()
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		o.errs = append(o.errs, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				o.spans = append(o.spans, s.Name)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(nil)
}

func (o *otlpReceiver) names() ([]string, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.spans...), append([]string(nil), o.errs...)
}

// Rule: with tracing.otlp_endpoint set, `herald run` exports a publish span
// per message to that OTLP/HTTP endpoint (flushed on shutdown at the
// latest).
func TestRunExportsPublishSpans(t *testing.T) {
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "")
	appendConfig(t, cfg, "tracing: {otlp_endpoint: \""+srv.URL+"\"}\n")
	if code, out := runChildSync(t, dir, "enqueue", "--create", "--config", cfg, "--lane", "main", "--topic", "wallet", "--type", "GiftSent"); code != 0 {
		t.Fatalf("enqueue: exit %d: %s", code, out)
	}
	run := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 30*time.Second, "1 delivered", func() bool {
		code, out := runChildSync(t, dir, "status", "--json", "--config", cfg)
		return code == 0 && strings.Contains(out, `"delivered":1`)
	})
	run.terminate(t)
	if !strings.Contains(run.stderr.String(), "herald: tracing to "+srv.URL+"/v1/traces") {
		t.Errorf("herald run must say where it exports spans:\n%s", run.stderr.String())
	}
	names, errs := recv.names()
	if len(errs) > 0 {
		t.Errorf("malformed exports: %v", errs)
	}
	if !strings.Contains(strings.Join(names, ","), "publish x.wallet") {
		t.Errorf("exported spans %v, want a publish x.wallet", names)
	}
}

// grpcReceiver is an OTLP/gRPC trace service that keeps span names and the
// service.name of each export.
type grpcReceiver struct {
	coltrace.UnimplementedTraceServiceServer
	mu       sync.Mutex
	spans    []string
	services []string
}

func (g *grpcReceiver) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				g.services = append(g.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				g.spans = append(g.spans, s.Name)
			}
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// Rule: with only the standard OTEL_* variables set (endpoint, protocol
// grpc, service name), `herald run` exports its spans over OTLP/gRPC under
// that service name.
func TestRunExportsOverGRPCFromOTELEnv(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	recv := &grpcReceiver{}
	srv := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(srv, recv)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_SERVICE_NAME", "wallet-relay")
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "")
	if code, out := runChildSync(t, dir, "enqueue", "--create", "--config", cfg, "--topic", "wallet", "--type", "GiftSent"); code != 0 {
		t.Fatalf("enqueue: exit %d: %s", code, out)
	}
	run := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 30*time.Second, "1 delivered", func() bool {
		code, out := runChildSync(t, dir, "status", "--json", "--config", cfg)
		return code == 0 && strings.Contains(out, `"delivered":1`)
	})
	run.terminate(t)
	if !strings.Contains(run.stderr.String(), "(OTLP/gRPC)") {
		t.Errorf("herald run must say it exports over gRPC:\n%s", run.stderr.String())
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if !strings.Contains(strings.Join(recv.spans, ","), "publish x.wallet") || !slices.Contains(recv.services, "wallet-relay") {
		t.Errorf("exported spans %v of services %v, want a publish x.wallet from wallet-relay", recv.spans, recv.services)
	}
}
