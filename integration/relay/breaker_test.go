package relay

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/natsembed"
	"github.com/heraldhq/herald/internal/testenv"
	. "github.com/heraldhq/herald/relay"
)

// Broker-down tests: with max_attempts 3, a broker that is down for much
// longer than three attempts' backoff must cost no event. The breaker
// pauses the lane, gives the attempts back, logs the outage once and
// reports the relay unready until a probe gets through.

// brokerDownFor is how long each broker stays down: far longer than the
// lane's three attempts with backoff would last.
const brokerDownFor = 15 * time.Second

// runBrokerDown relays events through tg while its broker is stopped for
// brokerDownFor and started again, and checks that none went dead, all
// are in the broker, the outage was logged once each way and the relay's
// health said unready throughout.
func runBrokerDown(t *testing.T, tg outageTarget) {
	e := newEnv(t)
	logs := &testenv.LogLines{}
	health := NewHealth()
	lane := e.lane(func(l *Lane) {
		l.Publisher, l.Destination, l.Broker = tg.pub, tg.dest, "under-test"
		l.Concurrency, l.BatchSize, l.PublishTimeout = 2, 50, time.Second
		l.Retry = Retry{Initial: 100 * time.Millisecond, Max: time.Second, MaxAttempts: 3}
		// A lease far longer than a publish: the default (3× the publish
		// timeout) can run out on a loaded machine between a claim and its
		// mark, and the claim that takes the row again charges an attempt
		// the outage did not cost (checkAttemptsCharged).
		l.Lease = time.Minute
	})
	e.startWith(Config{Lanes: []Lane{lane}, Logger: slog.New(logs), Health: health,
		ProbeInitial: 100 * time.Millisecond, ProbeMax: time.Second})

	first := events("a", "", 100)
	e.enqueue(first...)
	waitFor(t, 30*time.Second, "the first events delivered", func() bool { return e.stats().Delivered == 100 })

	// Per-event lines count only from the stop to the recovery: before and
	// after it, a server slowed by a loaded machine may time out some posts
	// while answering others, and those are the events' own verdicts.
	// Ready first: a publish that timed out on a loaded machine may have
	// opened the breaker for a moment, and its probe, sent before the
	// stop, would close it again inside the outage (ready until the next
	// publish fails), which is not what this test looks at.
	waitFor(t, 30*time.Second, "ready before the outage", func() bool { return len(health.Unready()) == 0 })
	stopped := logs.Mark()
	tg.stop(t)
	began := time.Now()
	second := events("b", "", 100)
	e.enqueue(second...)
	waitFor(t, 30*time.Second, "the outage noticed", func() bool { return len(health.Unready()) > 0 })
	for time.Since(began) < brokerDownFor {
		if why := health.Unready(); len(why) == 0 {
			t.Fatalf("the relay reported ready %v into the outage", time.Since(began).Round(time.Second))
		}
		if st := e.stats(); st.Dead > 0 {
			t.Fatalf("%d events dead %v into the outage", st.Dead, time.Since(began).Round(time.Second))
		}
		time.Sleep(250 * time.Millisecond) // a sampling pace, not a wait for a condition
	}
	tg.start(t)
	waitFor(t, 60*time.Second, "every event delivered after the restart", func() bool { return e.stats().Delivered == 200 })
	waitFor(t, 10*time.Second, "ready after the restart", func() bool { return len(health.Unready()) == 0 })

	if st := e.stats(); st.Dead != 0 {
		t.Fatalf("%d events dead", st.Dead)
	}
	checkAllStored(t, append(first, second...), tg.read(t))
	// Once each way inside the outage: from the stop to the first recovery.
	// Outside it, a publish that times out on a loaded machine opens the
	// breaker for a moment, as it should (a timeout is "unreachable").
	recovered := logs.First(stopped, "broker recovered")
	if recovered < 0 {
		t.Fatalf("no 'broker recovered' log line after the outage")
	}
	if n := len(logs.Between(stopped, recovered, "broker unreachable")); n > 1 {
		t.Errorf("%d 'broker unreachable' log lines during the outage, want 1", n)
	}
	if n, m := logs.Count("broker unreachable"), logs.Count("broker recovered"); n != m || n != 1 {
		t.Logf("the breaker opened %d and closed %d times in all (load outside the outage)", n, m)
	}
	if lines := logs.Between(stopped, recovered, "publish failed"); len(lines) != 0 {
		t.Errorf("%d per-event 'publish failed' log lines during the outage, want none: the outage is the lane's:\n%s",
			len(lines), strings.Join(lines, "\n"))
	}
	if b := health.Brokers(); len(b) != 1 || !b[0].Up || b[0].OutageTotal < brokerDownFor/2 {
		t.Errorf("health after the outage: %+v, want one broker, up, with an outage total near %v", b, brokerDownFor)
	}
	checkAttemptsCharged(t, e, logs, append(first, second...))
}

// checkAttemptsCharged fails unless each event's row was charged one
// attempt per publish failure the relay logged for it ("publish failed")
// plus the one that delivered it: a breaker's release gives its attempt
// back, so an outage adds none.
func checkAttemptsCharged(t *testing.T, e *env, logs *testenv.LogLines, evs []herald.Event) {
	t.Helper()
	failures := map[string]int{}
	for _, line := range logs.Between(0, -1, "publish failed") {
		if _, rest, ok := strings.Cut(line, " event_id="); ok {
			id, _, _ := strings.Cut(rest, " ")
			failures[id]++
		}
	}
	for _, ev := range evs {
		if rec, want := e.get(ev.ID), 1+failures[ev.ID]; rec.Attempts != want {
			t.Errorf("%s was charged %d attempts, want %d (%d failures logged, and its delivery)",
				ev.ID, rec.Attempts, want, failures[ev.ID])
		}
	}
}

// Rule: NATS stopped for 15s under a lane with max_attempts 3 costs no
// event; the same relay delivers them all once it is back.
func TestBrokerDownNATS(t *testing.T) {
	dir := t.TempDir()
	srv, err := natsembed.Start(natsembed.Config{Dir: dir, Port: natsembed.RandomPort})
	if err != nil {
		t.Fatal(err)
	}
	port, url := srv.Port(), srv.ClientURL()
	var mu sync.Mutex
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		srv.Shutdown()
	})
	p, err := nats.New(context.Background(), nats.Config{URL: url, Stream: "DOWN",
		Subjects: []string{"down.>"}, CreateStream: true, ReconnectWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	runBrokerDown(t, outageTarget{
		pub:  p,
		dest: broker.MustParseTemplate("down.{event_type}"),
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
		read: func(t *testing.T) []string { return streamIDs(t, url, "DOWN") },
	})
}

// Rule: a relay started while its NATS server is down reports the broker
// down at once (a ping, before any event), spends no attempt, and relays
// once the server comes up.
func TestBrokerDownAtStartNATS(t *testing.T) {
	port := testenv.FreePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	p, err := nats.New(context.Background(), nats.Config{URL: url, Stream: "START",
		Subjects: []string{"start.>"}, CreateStream: true, ReconnectWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("nats.New with the server down must not fail: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	e := newEnv(t)
	w := e.watch()
	logs := &testenv.LogLines{}
	health := NewHealth()
	lane := e.lane(func(l *Lane) {
		l.Publisher, l.Destination = p, broker.MustParseTemplate("start.{event_type}")
		l.Retry = Retry{Initial: 50 * time.Millisecond, Max: time.Second, MaxAttempts: 2}
	})
	e.startWith(Config{Lanes: []Lane{lane}, Logger: slog.New(logs), Health: health,
		ProbeInitial: 50 * time.Millisecond, ProbeMax: 500 * time.Millisecond})
	waitFor(t, 10*time.Second, "the broker reported down before any event", func() bool { return len(health.Unready()) > 0 })
	evs := events("s", "", 20)
	claims := w.claimCount()
	e.enqueue(evs...)
	// While the breaker is open only probes claim, an event each: with
	// max_attempts 2 an unpaused lane would have killed what they took.
	waitFor(t, 30*time.Second, "five probes with events", func() bool { return w.claimCount() >= claims+5 })
	if st := e.stats(); st.Dead != 0 || st.Retrying != 0 {
		t.Fatalf("events paid for a broker down at start: %+v", st)
	}
	srv, err := natsembed.Start(natsembed.Config{Dir: t.TempDir(), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	waitFor(t, 30*time.Second, "every event delivered", func() bool { return e.stats().Delivered == int64(len(evs)) })
	waitFor(t, 10*time.Second, "ready", func() bool { return len(health.Unready()) == 0 })
	checkAllStored(t, evs, streamIDs(t, url, "START"))
	if u, r := logs.Count("broker unreachable"), logs.Count("broker recovered"); u != 1 || r != 1 {
		t.Errorf("%d unreachable and %d recovered log lines, want 1 and 1", u, r)
	}
	checkAttemptsCharged(t, e, logs, evs)
}
