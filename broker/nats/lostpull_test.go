package nats_test

import (
	"context"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	heraldnats "github.com/heraldhq/herald/broker/nats"
)

// TestSubscriberGoesOnAfterALostPull: when the server does not serve a
// subscriber's pull request (here: refused, the consumer's 512 waiting
// requests taken by requests nobody reads), the subscriber notices within
// two heartbeats and pulls again. With the client library's defaults the
// message published after the refusal arrived 30 s later; a projection
// from a NATS 2.9.10 server stalled that long in 2 of 11 drains.
func TestSubscriberGoesOnAfterALostPull(t *testing.T) {
	url := requireMachineNATS(t)
	sfx := suffix()
	stream, prefix := "HERALD_LOST_"+sfx, "hlost"+sfx
	pub := newPublisher(t, url, stream, prefix)
	deleteStream(t, url, stream)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := heraldnats.NewSubscriber(ctx, heraldnats.SubscriberConfig{URL: url, Stream: stream, Durable: "lost"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fillWaitingPulls(t, url, stream, "lost")
	go func() {
		// After the unread requests expire (1 s), so that the server
		// would serve a new request at once.
		time.Sleep(1500 * time.Millisecond)
		pub.Publish(ctx, []broker.Message{{Event: herald.Event{ID: herald.NewID(), Topic: "t", Type: "x"}, Destination: prefix + ".x"}})
	}()
	start := time.Now()
	for {
		rs, err := s.Receive(ctx, 1)
		if ctx.Err() != nil {
			t.Fatalf("no message %v after the pull was refused (the library's defaults took 30 s)", time.Since(start))
		}
		if err == nil && len(rs) == 1 {
			return
		}
	}
}

// fillWaitingPulls takes all 512 waiting pull requests of durable on
// stream with requests of 1 s whose messages nobody reads.
func fillWaitingPulls(t *testing.T, url, stream, durable string) {
	t.Helper()
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	inbox := natsgo.NewInbox()
	if _, err := nc.SubscribeSync(inbox); err != nil {
		t.Fatal(err)
	}
	for range 512 {
		if err := nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+stream+"."+durable, inbox,
			[]byte(`{"batch":1,"expires":1000000000}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}
