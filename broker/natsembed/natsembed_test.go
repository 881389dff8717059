package natsembed_test

import (
	"context"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/broker/natsembed"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDefaults(t *testing.T) {
	c := natsembed.Config{}.WithDefaults()
	if c.Dir != "herald-data" || c.Host != "127.0.0.1" || c.Port != 4233 || c.SyncAlways {
		t.Errorf("defaults = %+v, want herald-data, 127.0.0.1, 4233, no SyncAlways", c)
	}
	if _, err := natsembed.Start(natsembed.Config{Port: 70000}); err == nil || !strings.Contains(err.Error(), "port 70000") {
		t.Errorf("Start with port 70000: %v, want an error naming the port", err)
	}
}

// Messages survive a restart on the same directory and port, with
// SyncAlways and without.
func TestRestartKeepsStream(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(map[bool]string{false: "default sync", true: "sync always"}[sync], func(t *testing.T) {
			cfg := natsembed.Config{Dir: t.TempDir(), Port: natsembed.RandomPort, SyncAlways: sync}
			srv, err := natsembed.Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(srv.ClientURL(), "nats://127.0.0.1:") {
				t.Errorf("ClientURL = %s, want loopback", srv.ClientURL())
			}
			publishTo(t, srv.ClientURL())
			// The port before shutdown: a stopped server has none, and port
			// 0 means the default 4233, which other tests use.
			cfg.Port = srv.Port()
			srv.Shutdown()
			srv.Shutdown() // idempotent

			srv, err = natsembed.Start(cfg)
			if err != nil {
				t.Fatalf("restart on port %d: %v", cfg.Port, err)
			}
			defer srv.Shutdown()
			if n := streamMsgs(t, srv.ClientURL()); n != 1 {
				t.Errorf("after restart the stream holds %d messages, want 1", n)
			}
		})
	}
}

func connect(t *testing.T, url string) (jetstream.JetStream, context.Context) {
	t.Helper()
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return js, ctx
}

func publishTo(t *testing.T, url string) {
	js, ctx := connect(t, url)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "s.x", []byte("hello")); err != nil {
		t.Fatal(err)
	}
}

func streamMsgs(t *testing.T, url string) uint64 {
	js, ctx := connect(t, url)
	s, err := js.Stream(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().State.Msgs
}
