package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
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
