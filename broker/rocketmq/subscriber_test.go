package rocketmq

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
	"github.com/heraldhq/herald/projector/projectortest"
)

// newFakeSubscriber is a subscriber of group on topic of c; it is closed
// at the end of the test.
func newFakeSubscriber(tb testing.TB, c *rmqfake.Cluster, cfg SubscriberConfig) *Subscriber {
	tb.Helper()
	cfg.NameServers = []string{c.NameServer()}
	s, err := NewSubscriber(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// publishEvents sends evs to topic through p and fails on any error.
func publishEvents(tb testing.TB, p *Publisher, topic string, evs []herald.Event) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs := make([]broker.Message, len(evs))
	for i, ev := range evs {
		msgs[i] = broker.Message{Event: ev, Destination: topic}
	}
	for i, r := range p.Publish(ctx, msgs) {
		if r.Err != nil {
			tb.Fatalf("publish %s: %v", evs[i].ID, r.Err)
		}
	}
}

// TestSubscriberProjects10k projects 10,000 events from an rmqfake topic
// of four queues, consumed by a clustering group of two projector
// processes, into a counting read model, and checks per-key order.
func TestSubscriberProjects10k(t *testing.T) {
	const topic = "count"
	c, err := rmqfake.New(rmqfake.Options{MaxLongPoll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	pub := newFakePublisher(t, c, Config{})
	group := projectortest.Name("g")
	projectortest.RunSource(t, projectortest.SourceConfig{
		KeyOrder: true,
		Subscribe: func(tb testing.TB) broker.Subscriber {
			return newFakeSubscriber(tb, c, SubscriberConfig{Group: group, Topic: topic})
		},
		Publish: func(tb testing.TB, evs []herald.Event) { publishEvents(tb, pub, topic, evs) },
	})
}

// TestMessageEvent: RocketMQ's own properties are not user headers, a
// message without CE_id gets its position as id and its sharding key as
// partition key, the content type comes back as a header, and envelope
// mode unwraps the payload and fills the attributes the properties lack.
func TestMessageEvent(t *testing.T) {
	m := &primitive.MessageExt{Message: primitive.Message{Topic: "wallet", Body: []byte(
		`{"tenant":"app1","event_id":"e1","event_type":"WalletGiftDebited","occurred_at":"2026-01-02T03:04:05Z","payload":{"a":1}}`)},
		QueueOffset: 7}
	m.Queue = &primitive.MessageQueue{Topic: "wallet", BrokerName: "broker-a", QueueId: 2}
	m.WithProperties(map[string]string{"KEYS": "e1 t1", "TAGS": "wallet", "UNIQ_KEY": "u", "SHARDING_KEY": "user-9",
		contentTypeProperty: "application/json", "transaction_id": "t1"})
	raw := messageEvent(BodyRaw, m)
	if raw.ID != "rocketmq:wallet:broker-a:2:7" || raw.PartitionKey != "user-9" {
		t.Errorf("raw: id %q key %q, want the position and the sharding key", raw.ID, raw.PartitionKey)
	}
	want := map[string]string{"transaction_id": "t1", "content-type": "application/json"}
	if !reflect.DeepEqual(raw.Headers, want) {
		t.Errorf("raw: headers %v, want %v (no system properties)", raw.Headers, want)
	}
	env := messageEvent(BodyEnvelope, m)
	if env.ID != "e1" || env.Type != "WalletGiftDebited" || env.Tenant != "app1" || string(env.Payload) != `{"a":1}` ||
		!env.CreatedAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("envelope: got %+v", env)
	}
}
