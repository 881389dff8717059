package mqtt

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector/projectortest"
)

// session is a persistent session of a test on the server at url: its
// client id, topic and share group, deleted from the server at the end.
type session struct {
	URL, ClientID, Topic, Group string
}

func newSession(t *testing.T, url, group string) session {
	s := session{URL: url, ClientID: testenv.Name("herald-sub"), Topic: testenv.Name("herald-sub") + "/events", Group: group}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = DeleteSession(ctx, Config{URL: url}, s.ClientID)
	})
	return s
}

// open opens a subscriber on the session (client id suffix for the
// processes of one group).
func (s session) open(tb testing.TB, suffix string) broker.Subscriber {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := NewSubscriber(ctx, SubscriberConfig{Conn: Config{URL: s.URL}, ClientID: s.ClientID + suffix, Topic: s.Topic, Group: s.Group})
	if err != nil {
		tb.Fatal(err)
	}
	return sub
}

// openCrashChild opens the subscriber a crash child's job describes.
func openCrashChild(desc json.RawMessage, _ projectortest.Store) (broker.Subscriber, error) {
	var s session
	if err := json.Unmarshal(desc, &s); err != nil {
		return nil, err
	}
	return NewSubscriber(context.Background(), SubscriberConfig{Conn: Config{URL: s.URL}, ClientID: s.ClientID, Topic: s.Topic, Group: s.Group})
}

// ackPaced counts the acks of every subscriber it opens, so that the
// publisher can wait for the consumers: mosquitto drops a session's
// messages beyond max_queued_messages (1000 by default) and the
// machine's server keeps that default.
type ackPaced struct{ acked atomic.Int32 }

func (a *ackPaced) wrap(s broker.Subscriber) broker.Subscriber {
	return projectortest.CountAcks{Subscriber: s, N: &a.acked}
}

// waitBehind waits until at most behind of sent messages are unacked.
func (a *ackPaced) waitBehind(tb testing.TB, sent, behind int) {
	testenv.WaitFor(tb, time.Minute, 5*time.Millisecond, "the consumers within reach of the publisher", func() bool {
		return sent-int(a.acked.Load()) <= behind
	})
}

// TestSubscriberProjects10k projects 10,000 events from a shared
// subscription of two persistent sessions into a counting read model.
func TestSubscriberProjects10k(t *testing.T) {
	url := testenv.RequireMQTT(t)
	s := newSession(t, url, testenv.Name("g"))
	pub := newPublisher(t, Config{URL: url})
	var n atomic.Int32
	pace := &ackPaced{}
	sent := 0
	t.Cleanup(func() { // the second process's session
		_ = DeleteSession(context.Background(), Config{URL: url}, s.ClientID+"-1")
	})
	projectortest.RunSource(t, projectortest.SourceConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber {
			return pace.wrap(s.open(tb, []string{"", "-1"}[n.Add(1)-1]))
		},
		Publish: func(tb testing.TB, evs []herald.Event) {
			pace.waitBehind(tb, sent, 100)
			brokertest.MustPublish(tb, pub, s.Topic, evs)
			sent += len(evs)
		},
	})
}

// TestSubscriberKeyOrder: one process on one topic applies each key's
// events in publish order.
func TestSubscriberKeyOrder(t *testing.T) {
	url := testenv.RequireMQTT(t)
	s := newSession(t, url, "")
	pub := newPublisher(t, Config{URL: url})
	pace := &ackPaced{}
	sent := 0
	projectortest.RunSource(t, projectortest.SourceConfig{
		Events: 2000, Processes: 1, KeyOrder: true,
		Subscribe: func(tb testing.TB) broker.Subscriber { return pace.wrap(s.open(tb, "")) },
		Publish: func(tb testing.TB, evs []herald.Event) {
			pace.waitBehind(tb, sent, 100)
			brokertest.MustPublish(tb, pub, s.Topic, evs)
			sent += len(evs)
		},
	})
}

// TestSubscriberKilledAfterCommitBeforeAck: the session's server resends
// the message a killed process committed but never acked; it is applied
// zero more times.
func TestSubscriberKilledAfterCommitBeforeAck(t *testing.T) {
	url := testenv.RequireMQTT(t)
	s := newSession(t, url, "")
	pub := newPublisher(t, Config{URL: url})
	// The session and its subscription exist before the event is
	// published: the server keeps it for the child.
	if err := s.open(t, "").Close(); err != nil {
		t.Fatal(err)
	}
	projectortest.RunKilledBeforeAck(t, projectortest.KilledConfig{
		Publish:   func(tb testing.TB, evs []herald.Event) { brokertest.MustPublish(tb, pub, s.Topic, evs) },
		Child:     s,
		Subscribe: func(tb testing.TB, _ projectortest.Store) broker.Subscriber { return s.open(tb, "") },
	})
}

// TestSubscriberForwardedEventsOnce: rows that copied an incoming
// CloudEvent's ce-id and ce-type (varied case), enqueued by plain SQL and
// relayed, are each projected once under their own id.
func TestSubscriberForwardedEventsOnce(t *testing.T) {
	url := testenv.RequireMQTT(t)
	s := newSession(t, url, "")
	pub := newPublisher(t, Config{URL: url})
	projectortest.RunForwarded(t, projectortest.ForwardedConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber { return s.open(tb, "") },
		Publisher: pub, Destination: s.Topic, HeaderPrefix: HeaderPrefix,
	})
}

// TestSubscriberReadsExactSpelling: envelopes from another producer whose
// headers member names the id and type in another case are read by the
// envelope's own attributes, each projected once.
func TestSubscriberReadsExactSpelling(t *testing.T) {
	url := testenv.RequireMQTT(t)
	s := newSession(t, url, "")
	raw, err := dial(context.Background(), Config{URL: url}.WithDefaults(), randomID("herald-test-raw-"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Disconnect(100) })
	projectortest.RunRawColliding(t, projectortest.RawConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber { return s.open(tb, "") },
		Publish: func(tb testing.TB, msgs []projectortest.RawMessage) {
			for _, m := range msgs {
				body := rawEnvelope(tb, m)
				if tok := raw.Publish(s.Topic, 1, false, body); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
					tb.Fatalf("publish: %v", tok.Error())
				}
			}
		},
		HeaderPrefix: HeaderPrefix,
	})
}

// rawEnvelope writes m as another producer's envelope: the headers named
// exactly ce-<attribute> as members, every other one in "headers".
func rawEnvelope(tb testing.TB, m projectortest.RawMessage) []byte {
	obj := map[string]any{"specversion": "1.0", "source": "elsewhere", "data": json.RawMessage(m.Body)}
	others := map[string]string{}
	for k, v := range m.Headers {
		if a, ok := cutExact(k); ok {
			obj[a] = v
		} else {
			others[k] = v
		}
	}
	obj["headers"] = others
	b, err := json.Marshal(obj)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func cutExact(k string) (string, bool) {
	if len(k) > len(HeaderPrefix) && k[:len(HeaderPrefix)] == HeaderPrefix {
		return k[len(HeaderPrefix):], true
	}
	return "", false
}

// TestNackRedeliversLocally: MQTT has no negative acknowledgement; a
// nacked message comes back from the next Receive, and once acked the
// session does not get it again.
func TestNackRedeliversLocally(t *testing.T) {
	url := testenv.RequireMQTT(t)
	s := newSession(t, url, "")
	sub := s.open(t, "")
	defer sub.Close()
	pub := newPublisher(t, Config{URL: url})
	ev := projectortest.Event("k", 1)
	brokertest.MustPublish(t, pub, s.Topic, []herald.Event{ev})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := sub.Receive(ctx, 10)
	if err != nil || len(got) != 1 || got[0].Event.ID != ev.ID {
		t.Fatalf("first receive: %v, %+v", err, got)
	}
	if err := got[0].Nack(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := sub.Receive(ctx, 10)
	if err != nil || len(again) != 1 || again[0].Event.ID != ev.ID {
		t.Fatalf("after the nack: %v, %+v", err, again)
	}
	if err := again[0].Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	// The same session again: nothing is waiting for it.
	resumed := s.open(t, "")
	defer resumed.Close()
	short, cancelShort := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancelShort()
	if got, err := resumed.Receive(short, 10); len(got) != 0 {
		t.Fatalf("the acked message came back: %+v (%v)", got, err)
	}
}
