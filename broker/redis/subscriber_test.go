package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	heraldredis "github.com/heraldhq/herald/broker/redis"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector/projectortest"
)

// subRedis returns a fresh stream name on the test server, deleted at the
// end; it skips (fails with CI=true) when the server is down.
func subRedis(t *testing.T) string {
	t.Helper()
	testenv.RequireTCP(t, "redis at 127.0.0.1:6379", "127.0.0.1:6379")
	name := projectortest.Name("herald-sub")
	t.Cleanup(func() {
		cl := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379"})
		defer cl.Close()
		cl.Del(context.Background(), name)
	})
	return name
}

func publishTo(tb testing.TB, pub *heraldredis.Publisher, stream string, evs []herald.Event) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs := make([]broker.Message, len(evs))
	for i, ev := range evs {
		msgs[i] = broker.Message{Event: ev, Destination: stream}
	}
	for i, r := range pub.Publish(ctx, msgs) {
		if r.Err != nil {
			tb.Fatalf("publish %s: %v", evs[i].ID, r.Err)
		}
	}
}

func newSub(tb testing.TB, stream string, minIdle time.Duration) *heraldredis.Subscriber {
	s, err := heraldredis.NewSubscriber(context.Background(), heraldredis.SubscriberConfig{Stream: stream, Group: "count", MinIdle: minIdle})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestSubscriberProjects10k projects 10,000 entries through a consumer
// group of two projector processes into a counting read model.
func TestSubscriberProjects10k(t *testing.T) {
	stream := subRedis(t)
	pub, err := heraldredis.New(context.Background(), heraldredis.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	projectortest.RunSource(t, projectortest.SourceConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber { return newSub(tb, stream, 0) },
		Publish:   func(tb testing.TB, evs []herald.Event) { publishTo(tb, pub, stream, evs) },
	})
}

// TestSubscriberReclaims: a consumer that read entries and died without
// acking leaves them pending; another consumer reclaims them after MinIdle.
func TestSubscriberReclaims(t *testing.T) {
	stream := subRedis(t)
	pub, err := heraldredis.New(context.Background(), heraldredis.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	evs := []herald.Event{projectortest.Event("a", 1), projectortest.Event("b", 1), projectortest.Event("c", 1)}
	publishTo(t, pub, stream, evs)
	crashed := newSub(t, stream, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := crashed.Receive(ctx, 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("first consumer read %d, %v", len(got), err)
	}
	_ = crashed.Close() // dies without acking
	heir := newSub(t, stream, 50*time.Millisecond)
	defer heir.Close()
	seen := map[string]bool{}
	for len(seen) < 3 {
		msgs, err := heir.Receive(ctx, 10)
		if err != nil {
			t.Fatalf("[reclaim] only %d of 3 entries reclaimed: %v", len(seen), err)
		}
		for _, m := range msgs {
			seen[m.Event.ID] = true
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, ev := range evs {
		if !seen[ev.ID] {
			t.Errorf("[reclaim] %s not reclaimed", ev.ID)
		}
	}
}

// TestSubscriberForwardedEventsOnce: 20 rows that copied an incoming
// CloudEvent's ce-id and ce-type (varied case), enqueued by plain SQL and
// relayed, are each projected once under their own id.
func TestSubscriberForwardedEventsOnce(t *testing.T) {
	stream := subRedis(t)
	pub, err := heraldredis.New(context.Background(), heraldredis.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	projectortest.RunForwarded(t, projectortest.ForwardedConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber { return newSub(tb, stream, 0) },
		Publisher: pub, Destination: stream, HeaderPrefix: "ce-",
	})
}

// TestSubscriberReadsExactSpelling: entries from another producer that
// carry ce-id and ce-type twice, exactly and in another case, are read by
// the exact spelling, each projected once.
func TestSubscriberReadsExactSpelling(t *testing.T) {
	stream := subRedis(t)
	cl := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379"})
	t.Cleanup(func() { _ = cl.Close() })
	projectortest.RunRawColliding(t, projectortest.RawConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber { return newSub(tb, stream, 0) },
		Publish: func(tb testing.TB, msgs []projectortest.RawMessage) {
			for _, m := range msgs {
				values := []any{heraldredis.DefaultBodyField, m.Body}
				for k, v := range m.Headers {
					values = append(values, k, v)
				}
				if err := cl.XAdd(context.Background(), &goredis.XAddArgs{Stream: stream, Values: values}).Err(); err != nil {
					tb.Fatalf("XADD: %v", err)
				}
			}
		},
		HeaderPrefix: "ce-",
	})
}
