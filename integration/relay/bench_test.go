package relay

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/natsembed"
	. "github.com/heraldhq/herald/relay"
)

// nopPublisher accepts everything at once: a relay with it measures the
// store's own limit (claim + mark).
type nopPublisher struct{}

func (nopPublisher) Publish(_ context.Context, msgs []broker.Message) []broker.Result {
	return make([]broker.Result, len(msgs))
}
func (nopPublisher) Close() error { return nil }

// BenchmarkRelaySQLite relays b.N events from SQLite, to a publisher that
// does nothing (the store's limit) and to an embedded NATS JetStream server,
// in the same run so the two can be compared on a noisy machine.
func BenchmarkRelaySQLite(b *testing.B) {
	srv, err := natsembed.Start(natsembed.Config{Dir: b.TempDir(), Port: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	for _, batch := range []int{100, 1000} {
		b.Run(fmt.Sprintf("nop/batch=%d", batch), func(b *testing.B) {
			benchRelay(b, nopPublisher{}, batch)
		})
		b.Run(fmt.Sprintf("nats/batch=%d", batch), func(b *testing.B) {
			stream := fmt.Sprintf("BENCH%d", time.Now().UnixNano())
			p, err := nats.New(context.Background(), nats.Config{URL: srv.ClientURL(), Stream: stream,
				Subjects: []string{stream + ".>"}, CreateStream: true})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			benchRelay(b, p, batch, func(l *Lane) { l.Destination = broker.MustParseTemplate(stream + ".{topic}") })
		})
	}
}

func benchRelay(b *testing.B, p broker.Publisher, batch int, mod ...func(*Lane)) {
	e := newBenchEnv(b)
	payload := make([]byte, 1024)
	for i := range payload {
		payload[i] = 'a' + byte(i%26)
	}
	for start := 0; start < b.N; start += 1000 {
		evs := make([]herald.Event, 0, 1000)
		for i := start; i < min(b.N, start+1000); i++ {
			evs = append(evs, herald.Event{Topic: "t", Type: "Bench", Payload: payload})
		}
		e.enqueue(evs...)
	}
	l := e.lane(func(l *Lane) {
		l.Publisher, l.BatchSize, l.PublishTimeout = p, batch, 5*time.Second
	})
	for _, m := range mod {
		m(&l)
	}
	drain(b, e, l)
}

// newBenchEnv is newEnv for benchmarks.
func newBenchEnv(b *testing.B) *env {
	return newEnvTB(b, filepath.Join(b.TempDir(), "bench.db"))
}
