package rocketmq

import (
	"context"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
	"github.com/heraldhq/herald/internal/testenv"
)

// TestOfficialConsumerReadsFromFake: the official push consumer
// (clustering) reads what the publisher sent through rmqfake: route
// lookup, heartbeats, consumer list, offset query, long-polling pulls (the
// store message format), tag filter, offset commits.
func TestOfficialConsumerReadsFromFake(t *testing.T) {
	c, err := rmqfake.New(rmqfake.Options{MaxLongPoll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	before := goleak.IgnoreCurrent()
	p := newFakePublisher(t, c, Config{TagMode: TagEventType})
	var sent []string
	for i := range 6 {
		m := fakeMessage("consumed", []string{"a", "b", "c"}[i%3])
		if i == 5 {
			m.Event.Type = "Other" // filtered out by the subscription
		}
		if r := publishOne(t, p, m, 5*time.Second); r.Err != nil {
			t.Fatal(r.Err)
		}
		if i < 5 {
			sent = append(sent, m.Event.ID)
		}
	}
	var mu sync.Mutex
	got := map[string]string{}
	pc, err := rmq.NewPushConsumer(consumer.WithNameServer([]string{c.NameServer()}), consumer.WithGroupName("readers"),
		consumer.WithInstance("herald-"+herald.NewID()), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	err = pc.Subscribe("consumed", consumer.MessageSelector{Type: consumer.TAG, Expression: "WalletGiftDebited"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				got[m.GetProperty("CE_id")] = m.GetTags()
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = pc.Shutdown()
		_ = p.Close()
		// Shutdown persists the consumed offsets: past the 5 consumed
		// messages (a trailing filtered message is passed over by the next
		// pull, which may not have come yet: 5 or 6).
		testenv.WaitFor(t, 5*time.Second, 20*time.Millisecond, "offsets committed past the consumed messages", func() bool {
			var sum int64
			var offs []int64
			for q := range 4 {
				off, _ := c.CommittedOffset("readers", "consumed", q)
				sum += off
				offs = append(offs, off)
			}
			if sum < 5 {
				t.Logf("committed offsets per queue: %v", offs)
			}
			return sum >= 5
		})
		c.Close()
		// Nothing but the client's own sleepers and abandoned pulls
		// (TestMain) outlives the consumer and the fake.
		opts := append([]goleak.Option{before}, leakIgnores()...)
		var last error
		defer func() {
			if last != nil {
				t.Log(last)
			}
		}()
		testenv.WaitFor(t, 10*time.Second, 50*time.Millisecond, "no consumer goroutine left", func() bool {
			last = goleak.Find(opts...)
			return last == nil
		})
	}()
	testenv.WaitFor(t, 30*time.Second, 50*time.Millisecond, "the consumer got 5 messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 5
	})
	mu.Lock()
	for _, id := range sent {
		if got[id] != "WalletGiftDebited" {
			t.Errorf("event %s: tag %q", id, got[id])
		}
	}
	if len(got) != 5 {
		t.Errorf("consumer got %d messages, want 5 (the Other one filtered)", len(got))
	}
	mu.Unlock()
}
