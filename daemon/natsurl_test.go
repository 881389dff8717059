package daemon

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	natsgo "github.com/nats-io/nats.go"
)

// TestEmbeddedRandomPortURL checks that ClientURLs gives the port an
// embedded server chose at start (port: -1), and that it accepts clients.
func TestEmbeddedRandomPortURL(t *testing.T) {
	dir := t.TempDir()
	f, err := parse([]byte("store: {driver: sqlite, dsn: "+filepath.Join(dir, "h.db")+"}\n"+
		"brokers:\n  b: {type: nats, stream: URLTEST, subjects: [\"u.>\"], create_stream: true, embedded: {dir: "+
		filepath.Join(dir, "nats")+", port: -1}}\n"+
		"lanes:\n  - {name: main, destination: \"u.{topic}\"}\n"), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := OpenStore(ctx, f, true)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.StartBrokers(ctx, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	url := rt.ClientURLs["b"]
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":-1") || strings.HasSuffix(url, ":0") {
		t.Fatalf("ClientURLs[b] = %q, want the embedded server's chosen address", url)
	}
	if !strings.Contains(rt.Endpoints["b"], url) {
		t.Fatalf("Endpoints[b] = %q does not name %s", rt.Endpoints["b"], url)
	}
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	nc.Close()
}
