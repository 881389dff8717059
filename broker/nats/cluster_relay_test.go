package nats_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	heraldnats "github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/internal/clustertest"
	"github.com/heraldhq/herald/relay"
)

// TestClusterFailover relays clustertest.Events() events into a stream of 3
// replicas on a 3-node cluster while the stream's leader is stopped (and
// later started again) and then another node is restarted, with two
// projectors consuming the stream through the same failures. Every event
// must be in the stream exactly once (Nats-Msg-Id dedupes the republishes
// of acks lost in the leader change), none dead, and the read model must
// count every event exactly once.
func TestClusterFailover(t *testing.T) {
	c := startCluster(t)
	n := clustertest.Events()
	load := clustertest.NewLoad(t, n, 100)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pub, err := heraldnats.New(ctx, heraldnats.Config{URL: c.urls(), Stream: "CLUSTER", Subjects: []string{"hc.>"},
		CreateStream: true, Replicas: 3, ReconnectWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	nc, js := c.connect()
	defer nc.Close()
	// The stream is created by the publisher (with 3 replicas); the
	// projectors' consumer needs it to exist first.
	waitUntil(t, 20*time.Second, "stream CLUSTER created with 3 replicas", func() bool {
		s, err := js.Stream(ctx, "CLUSTER")
		return err == nil && s.CachedInfo().Config.Replicas == 3
	})

	model := clustertest.NewModel(t)
	stopProjectors := runNATSProjectors(t, c.urls(), model, 2)
	stopRelay := load.Relay(t, clustertest.Lane(pub, "hc.{event_type}", relay.OrderingNone))

	load.WaitDelivered(t, n/4, 60*time.Second)
	leader := c.streamLeader(js, "CLUSTER")
	t.Logf("stopping stream leader n%d at %d delivered", leader, load.Stats(t).Delivered)
	c.stop(leader)
	load.WaitDelivered(t, n/2, 60*time.Second)
	t.Logf("starting n%d again at %d delivered", leader, load.Stats(t).Delivered)
	c.start(leader)
	other := (leader + 1) % 3
	load.WaitDelivered(t, 3*n/4, 60*time.Second)
	t.Logf("restarting n%d at %d delivered", other, load.Stats(t).Delivered)
	c.stop(other)
	c.start(other)

	load.WaitDelivered(t, n, 90*time.Second)
	stopRelay()
	if st := load.Stats(t); st.Delivered != int64(n) || st.Dead != 0 {
		t.Fatalf("outbox stats %+v, want %d delivered and none dead", st, n)
	}
	load.Retried(t)
	checkStreamOnce(t, js, "CLUSTER", n)
	model.WaitProjected(t, n, 90*time.Second)
	stopProjectors()
	model.CheckExactlyOnce(t, load.Sent)
}

// runNATSProjectors runs procs projectors sharing one durable consumer on
// the cluster; the returned function stops them.
func runNATSProjectors(t *testing.T, urls string, model *clustertest.Model, procs int) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range procs {
		sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
		sub, err := heraldnats.NewSubscriber(sctx, heraldnats.SubscriberConfig{URL: urls, Stream: "CLUSTER",
			Durable: "count", AckWait: 10 * time.Second})
		scancel()
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		p := model.Projector(t)
		wg.Go(func() {
			defer sub.Close()
			if err := p.Run(ctx, sub); err != nil {
				t.Errorf("projector %d: %v", i, err)
			}
		})
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// checkStreamOnce reads the whole stream and checks it holds n messages,
// each event id once.
func checkStreamOnce(t *testing.T, js jetstream.JetStream, stream string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[string]int, n)
	read := 0
	for read < n && ctx.Err() == nil {
		batch, err := cons.Fetch(min(1000, n-read), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			seen[m.Headers().Get("ce-id")]++
			read++
		}
	}
	info, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	if msgs := info.CachedInfo().State.Msgs; msgs != uint64(n) || read != n || len(seen) != n {
		t.Errorf("stream %s holds %d messages (read %d, %d distinct event ids), want %d, each once", stream, msgs, read, len(seen), n)
	}
	dups := 0
	for id, k := range seen {
		if k > 1 && dups < 5 {
			t.Errorf("event %s stored %d times", id, k)
			dups++
		}
	}
}
