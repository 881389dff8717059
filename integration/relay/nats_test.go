package relay

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/natsembed"
	. "github.com/heraldhq/herald/relay"
)

// flaky fails a share of messages before they reach the real publisher.
// It does not hold back a failed key's later messages in a batch: ordered
// lanes send at most one message per key per Publish call.
type flaky struct {
	broker.Publisher
	mu   sync.Mutex
	rng  *rand.Rand
	rate float64
}

func (f *flaky) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	results := make([]broker.Result, len(msgs))
	var pass []broker.Message
	var idx []int
	f.mu.Lock()
	for i, m := range msgs {
		if f.rng.Float64() < f.rate {
			results[i].Err = errors.New("injected failure")
			continue
		}
		pass, idx = append(pass, m), append(idx, i)
	}
	f.mu.Unlock()
	for j, r := range f.Publisher.Publish(ctx, pass) {
		results[idx[j]] = r
	}
	return results
}

// Rule: against the real embedded NATS server, with a fifth of publishes
// failing and two relays of three workers each, every event is stored and
// each key's events sit in the stream in commit order.
func TestEmbeddedNATSPerKeyOrderWithFailures(t *testing.T) {
	srv, err := natsembed.Start(natsembed.Config{Dir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	p, err := nats.New(context.Background(), nats.Config{URL: srv.ClientURL(), Stream: "ORDER",
		Subjects: []string{"order.>"}, CreateStream: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	e := newEnv(t)
	const keys, perKey = 20, 25
	for k := range keys {
		e.enqueue(events(fmt.Sprintf("k%02d", k), fmt.Sprintf("key-%02d", k), perKey)...)
	}
	l := e.lane(func(l *Lane) {
		l.Publisher = &flaky{Publisher: p, rng: rand.New(rand.NewPCG(3, 4)), rate: 0.2}
		l.Destination = broker.MustParseTemplate("order.{partition_key}")
		l.Ordering, l.Concurrency, l.BatchSize = OrderingKey, 3, 40
		l.Retry = Retry{Initial: 2 * time.Millisecond, Max: 10 * time.Millisecond, MaxAttempts: 1000}
		// As in TestPerKeyOrderUnderInjectedFailures: no lease runs out.
		l.Lease = 20 * time.Second
	})
	e.start(l)
	e.start(l)
	waitFor(t, 120*time.Second, "all delivered", func() bool { return e.stats().Delivered == keys*perKey })

	last := map[string]string{}
	ids := map[string]bool{}
	for _, m := range readAll(t, srv.ClientURL(), "ORDER", keys*perKey) {
		id, key := m.Header.Get("ce-id"), m.Header.Get("ce-subject")
		if prev := last[key]; id <= prev {
			t.Fatalf("key %s: %s stored after %s; per-key commit order broken", key, id, prev)
		}
		last[key], ids[id] = id, true
	}
	if len(ids) != keys*perKey {
		t.Fatalf("stream holds %d distinct events, want %d", len(ids), keys*perKey)
	}
}

func readAll(t *testing.T, url, stream string, n int) []*natsgo.Msg {
	t.Helper()
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*natsgo.Msg
	for len(out) < n && ctx.Err() == nil {
		batch, err := cons.Fetch(n-len(out), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			out = append(out, &natsgo.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
		}
	}
	return out
}
