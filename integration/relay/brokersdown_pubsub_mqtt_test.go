package relay

import (
	"context"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/mqtt"
	"github.com/heraldhq/herald/broker/pubsub"
	"github.com/heraldhq/herald/internal/testenv"
)

// Rule: Pub/Sub (pstest behind a proxy) cut off for 15s under a lane with
// max_attempts 3 costs no event.
func TestBrokerDownPubSub(t *testing.T) {
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	const topic = "projects/herald-test/topics/down.Happened"
	if _, err := srv.GServer.CreateTopic(context.Background(), &pb.Topic{Name: topic}); err != nil {
		t.Fatal(err)
	}
	px := testenv.StartProxy(t, srv.Addr)
	p, err := pubsub.New(context.Background(), pubsub.Config{Project: "herald-test", EmulatorHost: px.Addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	runBrokerDown(t, outageTarget{
		pub: p, dest: broker.MustParseTemplate("down.{event_type}"), stop: px.Stop, start: px.Start,
		read: func(*testing.T) []string {
			var ids []string
			for _, m := range srv.Messages() {
				if m.Topic == topic {
					ids = append(ids, m.Attributes["ce-id"])
				}
			}
			return ids
		},
	})
}

// Rule: a mosquitto of the test's own, stopped for 15s under a lane with
// max_attempts 3, costs no event; a persistent session subscribed before
// holds them all.
func TestBrokerDownMQTT(t *testing.T) {
	srv := testenv.StartMosquitto(t)
	conn := mqtt.Config{URL: srv.URL(), ConnectTimeout: time.Second}
	sub := mqtt.SubscriberConfig{Conn: conn, ClientID: "herald-down-reader", Topic: "down/#"}
	s, err := mqtt.NewSubscriber(context.Background(), sub)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close() // the session keeps what comes for it
	p, err := mqtt.New(context.Background(), conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	runBrokerDown(t, outageTarget{
		pub: p, dest: broker.MustParseTemplate("down/{event_type}"), stop: srv.Stop, start: srv.Start,
		read: func(t *testing.T) []string { return drainMQTT(t, sub, 200) },
	})
}

// drainMQTT reads the session until want events came or none comes for a
// second, acking them, and returns their ids.
func drainMQTT(t *testing.T, cfg mqtt.SubscriberConfig, want int) []string {
	s, err := mqtt.NewSubscriber(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []string
	for len(ids) < want {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		got, err := s.Receive(ctx, 500)
		cancel()
		if err != nil {
			break
		}
		for _, r := range got {
			ids = append(ids, r.Event.ID)
			_ = r.Ack(context.Background())
		}
	}
	return ids
}
