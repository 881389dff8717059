package relay

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/natsembed"
	"github.com/heraldhq/herald/broker/rabbitmq"
	"github.com/heraldhq/herald/internal/testenv/rabbitenv"
	. "github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// Broker-outage tests: a broker server of the test's own, on its own port,
// is stopped in the middle of a relay run, kept down while the relay keeps
// trying, and started again on the same port and data. Every event must end
// delivered and in the broker, none dead: an outage costs retries, never
// events, as long as it is shorter than max_attempts' worth of backoff.

// The shape of every outage run.
const (
	outageEvents = 2000 // events relayed
	outageStopAt = 500  // messages handed to the publisher before the stop
	outageFor    = 2 * time.Second
)

// outageTarget is one broker under test: its publisher, the lane's
// destination, how to stop and restart its server, and how to read back the
// event ids it stored (duplicates included).
type outageTarget struct {
	pub   broker.Publisher
	dest  broker.Template
	stop  func(t testing.TB)
	start func(t testing.TB)
	read  func(t *testing.T) []string
}

// gate holds every publish after the first n messages until the broker is
// down, so that the stop lands mid-run however fast the relay is.
type gate struct {
	n       int64
	count   atomic.Int64
	reached chan struct{}
	once    sync.Once
	open    chan struct{}
}

func newGate(n int) *gate {
	return &gate{n: int64(n), reached: make(chan struct{}), open: make(chan struct{})}
}

// hook is the lane's BeforePublish.
func (g *gate) hook(ctx context.Context, _ broker.Message) error {
	if g.count.Add(1) <= g.n {
		return nil
	}
	g.once.Do(func() { close(g.reached) })
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err() // retryable: the event goes back to pending
	}
}

// runOutage relays outageEvents through tg, stopping its broker after
// outageStopAt messages for at least outageFor, and checks the outcome.
func runOutage(t *testing.T, tg outageTarget) {
	e := newEnv(t)
	evs := events("o", "", outageEvents)
	for i := 0; i < len(evs); i += 500 {
		e.enqueue(evs[i:min(i+500, len(evs))]...)
	}
	g := newGate(outageStopAt)
	r := e.start(e.lane(func(l *Lane) {
		l.Publisher, l.Destination, l.BeforePublish = tg.pub, tg.dest, g.hook
		l.Concurrency, l.BatchSize, l.PublishTimeout = 2, 100, time.Second
		// A short backoff so that the relay keeps trying throughout, and
		// max_attempts far above what the outage costs: it lasts outageFor
		// plus the restart (~10-15s for RabbitMQ), some 100-200 tries at
		// backoffs capped at 200ms.
		l.Retry = Retry{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, MaxAttempts: 1000}
	}))

	select {
	case <-g.reached:
	case <-time.After(60 * time.Second):
		t.Fatalf("the relay did not reach %d messages within 60s", outageStopAt)
	}
	began := time.Now()
	tg.stop(t)
	close(g.open)
	stopped := time.Since(began)
	before := e.stats().Delivered

	// Keep the broker down for outageFor while the relay fails and retries;
	// nothing may go dead meanwhile. The conditions read the observer's
	// counts, not the database: polling SQLite every few milliseconds would
	// slow the relay down (much so under -race).
	retried := func() int { return r.total(func(s BatchStats) int { return s.Retried + s.Released }) }
	// The breaker releases rows the down broker did not take (attempts
	// given back) rather than retrying them: either counts as a failed try.
	waitFor(t, outageFor+30*time.Second, "failed tries during the outage", func() bool {
		noneDead(t, r, "during the outage")
		return time.Since(began) >= outageFor && retried() > 0
	})
	failedDown := retried()
	down := e.stats()

	restart := time.Now()
	tg.start(t)
	restarted := time.Since(restart)
	delivered := func() int { return r.total(func(s BatchStats) int { return s.Delivered }) }
	waitFor(t, 120*time.Second, "every event delivered after the restart", func() bool {
		noneDead(t, r, "after the restart")
		return delivered() >= outageEvents && e.stats().Delivered == outageEvents
	})
	recovered := time.Since(restart)

	ids := tg.read(t)
	dups := checkAllStored(t, evs, ids)
	if st := e.stats(); st.Dead != 0 || st.Delivered != outageEvents {
		t.Fatalf("the table holds %d delivered and %d dead events, want %d and 0", st.Delivered, st.Dead, outageEvents)
	}
	maxAttempts, retriedEvents := attempts(t, e)
	t.Logf("stop took %v, restart %v; delivered %d before the stop, %d retrying while down; "+
		"%d failed attempts while down, %d in all; all %d delivered %v after the restart; broker holds %d messages, "+
		"%d duplicates; %d events needed more than one attempt, the most was %d",
		stopped.Round(time.Millisecond), restarted.Round(time.Millisecond), before, down.Retrying,
		failedDown, retried(), outageEvents, recovered.Round(time.Millisecond), len(ids), dups, retriedEvents, maxAttempts)
}

// noneDead fails the test if the relay has reported a dead event.
func noneDead(t *testing.T, r *running, when string) {
	t.Helper()
	if n := r.total(func(s BatchStats) int { return s.Dead }); n > 0 {
		t.Fatalf("%d events went dead %s; an outage must only cost retries", n, when)
	}
}

// checkAllStored fails unless every event id is among ids, and returns how
// many ids are duplicates.
func checkAllStored(t *testing.T, evs []herald.Event, ids []string) int {
	t.Helper()
	seen := make(map[string]int, len(ids))
	for _, id := range ids {
		seen[id]++
	}
	var missing []string
	for _, ev := range evs {
		if seen[ev.ID] == 0 {
			missing = append(missing, ev.ID)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d events marked delivered are not in the broker, e.g. %v",
			len(missing), len(evs), missing[:min(5, len(missing))])
	}
	if len(seen) != len(evs) {
		t.Fatalf("the broker holds %d distinct event ids, want %d", len(seen), len(evs))
	}
	return len(ids) - len(seen)
}

// attempts returns the most attempts any delivered event took and how many
// took more than one.
func attempts(t *testing.T, e *env) (most, retried int) {
	t.Helper()
	p := store.ListParams{Scope: store.Scope{Table: e.table}, Status: store.StatusDelivered, Limit: 500}
	for {
		recs, err := e.store.List(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			return most, retried
		}
		for _, rec := range recs {
			most = max(most, rec.Attempts)
			if rec.Attempts > 1 {
				retried++
			}
		}
		p.AfterID = recs[len(recs)-1].ID
	}
}

// Rule: an embedded NATS server stopped mid-run and started again on the
// same port and store directory loses no event and kills none.
func TestOutageNATS(t *testing.T) {
	dir := t.TempDir()
	srv, err := natsembed.Start(natsembed.Config{Dir: dir, Port: natsembed.RandomPort})
	if err != nil {
		t.Fatal(err)
	}
	port, url := srv.Port(), srv.ClientURL()
	var mu sync.Mutex // guards srv: the cleanup may run while a restart failed halfway
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		srv.Shutdown()
	})
	p, err := nats.New(context.Background(), nats.Config{URL: url, Stream: "OUTAGE",
		Subjects: []string{"outage.>"}, CreateStream: true, ReconnectWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })

	runOutage(t, outageTarget{
		pub:  p,
		dest: broker.MustParseTemplate("outage.{event_type}"),
		stop: func(testing.TB) {
			mu.Lock()
			defer mu.Unlock()
			srv.Shutdown()
		},
		start: func(t testing.TB) {
			mu.Lock()
			defer mu.Unlock()
			s, err := natsembed.Start(natsembed.Config{Dir: dir, Port: port})
			if err != nil {
				t.Fatalf("restart on port %d: %v", port, err)
			}
			srv = s
		},
		read: func(t *testing.T) []string { return streamIDs(t, url, "OUTAGE") },
	})
}

// streamIDs reads every message of a stream back and returns its event ids.
func streamIDs(t *testing.T, url, stream string) []string {
	t.Helper()
	msgs := readAll(t, url, stream, streamLen(t, url, stream))
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.Header.Get("ce-id")
	}
	return ids
}

// streamLen is the number of messages in a stream.
func streamLen(t *testing.T, url, stream string) int {
	t.Helper()
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	return int(info.State.Msgs)
}

// Rule: a RabbitMQ server stopped mid-run and started again on the same
// port and data directory loses no event and kills none.
func TestOutageRabbitMQ(t *testing.T) {
	node := rabbitenv.StartRabbitNode(t)
	const exchange, queue = "herald.outage", "herald.outage"
	declareRabbitQueue(t, node.URL(), exchange, queue)
	p, err := rabbitmq.New(context.Background(), rabbitmq.Config{URL: node.URL(), Exchange: exchange,
		DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })

	runOutage(t, outageTarget{
		pub:   p,
		dest:  broker.MustParseTemplate("outage.{event_type}"),
		stop:  node.Stop,
		start: node.Start,
		read:  func(t *testing.T) []string { return queueIDs(t, node.URL(), queue) },
	})
}

// declareRabbitQueue declares a durable topic exchange and a durable queue
// bound to all of it: both, and the persistent messages in the queue,
// survive the restart.
func declareRabbitQueue(t *testing.T, url, exchange, queue string) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err == nil {
		err = ch.ExchangeDeclare(exchange, "topic", true, false, false, false, nil)
	}
	if err == nil {
		_, err = ch.QueueDeclare(queue, true, false, false, false, nil)
	}
	if err == nil {
		err = ch.QueueBind(queue, "#", exchange, false, nil)
	}
	if err != nil {
		t.Fatalf("declare exchange and queue: %v", err)
	}
}

// queueIDs drains the queue and returns the message ids (event ids) of
// every message it held.
func queueIDs(t *testing.T, url, queue string) []string {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, q.Messages)
	timeout := time.After(30 * time.Second)
	for len(ids) < q.Messages {
		select {
		case d := <-deliveries:
			ids = append(ids, d.MessageId)
		case <-timeout:
			t.Fatalf("read %d of the queue's %d messages within 30s", len(ids), q.Messages)
		}
	}
	return ids
}
