package nats_test

import (
	"context"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	heraldnats "github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/projector/projectortest"
)

// TestSubscriberProjects10k projects 10,000 events from a durable pull
// consumer, shared by two projector processes, into a counting read model.
func TestSubscriberProjects10k(t *testing.T) {
	url := requireMachineNATS(t)
	sfx := suffix()
	stream, prefix := "HERALD_SUB_"+sfx, "hsub"+sfx
	pub := newPublisher(t, url, stream, prefix)
	deleteStream(t, url, stream)
	projectortest.RunSource(t, projectortest.SourceConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := heraldnats.NewSubscriber(ctx, heraldnats.SubscriberConfig{URL: url, Stream: stream, Durable: "count"})
			if err != nil {
				tb.Fatal(err)
			}
			return s
		},
		Publish: func(tb testing.TB, evs []herald.Event) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			msgs := make([]broker.Message, len(evs))
			for i, ev := range evs {
				msgs[i] = broker.Message{Event: ev, Destination: prefix + ".count"}
			}
			for i, r := range pub.Publish(ctx, msgs) {
				if r.Err != nil {
					tb.Fatalf("publish %s: %v", evs[i].ID, r.Err)
				}
			}
		},
	})
}

// TestSubscriberOneFilterSubject: a consumer with one filter subject works
// on servers before 2.10 too (the machine's may be one), which reject
// multi-subject filters: one subject goes in the single-subject field.
func TestSubscriberOneFilterSubject(t *testing.T) {
	url := requireMachineNATS(t)
	sfx := suffix()
	stream, prefix := "HERALD_SUB1_"+sfx, "hsub1"+sfx
	pub := newPublisher(t, url, stream, prefix)
	deleteStream(t, url, stream)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var msgs []broker.Message
	for _, dest := range []string{prefix + ".a.skip", prefix + ".b.take", prefix + ".a.take"} {
		msgs = append(msgs, broker.Message{Event: herald.Event{ID: herald.NewID(), Topic: "t", Type: dest}, Destination: dest})
	}
	for i, r := range pub.Publish(ctx, msgs) {
		if r.Err != nil {
			t.Fatalf("publish %d: %v", i, r.Err)
		}
	}
	s, err := heraldnats.NewSubscriber(ctx, heraldnats.SubscriberConfig{URL: url, Stream: stream, Durable: "one",
		FilterSubjects: []string{prefix + ".*.take"}})
	if err != nil {
		t.Fatalf("a consumer with one filter subject: %v", err)
	}
	defer s.Close()
	var got []string
	for len(got) < 2 {
		rs, err := s.Receive(ctx, 10)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		for _, r := range rs {
			got = append(got, r.Event.Type)
			r.Ack(ctx)
		}
	}
	if len(got) != 2 || got[0] != prefix+".b.take" || got[1] != prefix+".a.take" {
		t.Fatalf("received %v, want the two .take messages in order", got)
	}
}

// TestSubscriberForwardedEventsOnce: 20 rows that copied an incoming
// CloudEvent's Ce-Id and Ce-Type (varied case), enqueued by plain SQL and
// relayed, are each projected once under their own id.
func TestSubscriberForwardedEventsOnce(t *testing.T) {
	url := requireMachineNATS(t)
	sfx := suffix()
	stream, prefix := "HERALD_FWD_"+sfx, "hfwd"+sfx
	pub := newPublisher(t, url, stream, prefix)
	deleteStream(t, url, stream)
	projectortest.RunForwarded(t, projectortest.ForwardedConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := heraldnats.NewSubscriber(ctx, heraldnats.SubscriberConfig{URL: url, Stream: stream, Durable: "fwd"})
			if err != nil {
				tb.Fatal(err)
			}
			return s
		},
		Publisher: pub, Destination: prefix + ".fwd", HeaderPrefix: "ce-",
	})
}

// TestSubscriberReadsExactSpelling: messages from another producer that
// carry ce-id and ce-type twice, exactly and in another case, are read by
// the exact spelling, each projected once.
func TestSubscriberReadsExactSpelling(t *testing.T) {
	url := requireMachineNATS(t)
	sfx := suffix()
	stream, prefix := "HERALD_RAW_"+sfx, "hraw"+sfx
	newPublisher(t, url, stream, prefix) // creates the stream
	deleteStream(t, url, stream)
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	projectortest.RunRawColliding(t, projectortest.RawConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := heraldnats.NewSubscriber(ctx, heraldnats.SubscriberConfig{URL: url, Stream: stream, Durable: "raw"})
			if err != nil {
				tb.Fatal(err)
			}
			return s
		},
		Publish: func(tb testing.TB, msgs []projectortest.RawMessage) {
			for _, m := range msgs {
				nm := &natsgo.Msg{Subject: prefix + ".raw", Data: m.Body, Header: natsgo.Header{}}
				for k, v := range m.Headers {
					nm.Header.Set(k, v)
				}
				if _, err := nc.RequestMsg(nm, 5*time.Second); err != nil {
					tb.Fatalf("publish: %v", err)
				}
			}
		},
		HeaderPrefix: "ce-",
	})
}

// TestSubscriberBodyIDs: a projection reading the event id from the body
// applies once each event that Herald published and a stand-in for an old
// worker published again without headers; messages without an id go dead.
func TestSubscriberBodyIDs(t *testing.T) {
	url := requireMachineNATS(t)
	sfx := suffix()
	stream, prefix := "HERALD_BID_"+sfx, "hbid"+sfx
	pub := newPublisher(t, url, stream, prefix)
	deleteStream(t, url, stream)
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	projectortest.RunBodyIDs(t, projectortest.BodyIDConfig{
		Subscribe: func(tb testing.TB, durable string) broker.Subscriber {
			return newSubscriber(tb, heraldnats.SubscriberConfig{URL: url, Stream: stream, Durable: durable})
		},
		Publisher: pub, Destination: prefix + ".wallet",
		PublishRaw: func(tb testing.TB, msgs []projectortest.RawMessage) {
			for _, m := range msgs {
				if _, err := nc.Request(prefix+".wallet", m.Body, 5*time.Second); err != nil {
					tb.Fatalf("publish: %v", err)
				}
			}
		},
	})
}

// newSubscriber opens a subscriber of cfg, failing tb if it cannot.
func newSubscriber(tb testing.TB, cfg heraldnats.SubscriberConfig) broker.Subscriber {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := heraldnats.NewSubscriber(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
