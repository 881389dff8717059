package rocketmq

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector/projectortest"
)

// crashSubscriber is the subscriber of a crash child (projectortest.CrashChild).
type crashSubscriber struct {
	NameServer string `json:"name_server"`
	Group      string `json:"group"`
	Topic      string `json:"topic"`
}

// openCrashChild opens the subscriber a crash child's job describes.
func openCrashChild(desc json.RawMessage, _ projectortest.Store) (broker.Subscriber, error) {
	var s crashSubscriber
	if err := json.Unmarshal(desc, &s); err != nil {
		return nil, err
	}
	return NewSubscriber(context.Background(), SubscriberConfig{NameServers: []string{s.NameServer}, Group: s.Group, Topic: s.Topic})
}

// TestSubscriberKilledAfterCommitBeforeAck: a projector process on a
// RocketMQ subscriber is killed with SIGKILL after its ledger commit and
// before its ack; no consumer offset was committed, the group hands the
// message to a new subscriber, it is applied zero more times, and that
// subscriber's ack commits the offset past it.
func TestSubscriberKilledAfterCommitBeforeAck(t *testing.T) {
	const topic = "crash"
	c, err := rmqfake.New(rmqfake.Options{MaxLongPoll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	group := projectortest.Name("g")
	projectortest.RunKilledBeforeAck(t, projectortest.KilledConfig{
		Publish: func(tb testing.TB, evs []herald.Event) {
			publishEvents(tb, newFakePublisher(tb, c, Config{}), topic, evs)
		},
		Child: crashSubscriber{NameServer: c.NameServer(), Group: group, Topic: topic},
		AfterKill: func(t *testing.T) {
			if sum := committed(c, group, topic); sum != 0 {
				t.Fatalf("[no offset before ack] the killed child committed offsets summing to %d, want 0", sum)
			}
			// The broker drops the killed consumer when its connection
			// closes; until then a new member would leave it the queue.
			testenv.WaitFor(t, 5*time.Second, 5*time.Millisecond, "the killed consumer gone from the group", func() bool {
				return len(c.Consumers(group)) == 0
			})
		},
		Subscribe: func(tb testing.TB, _ projectortest.Store) broker.Subscriber {
			return newFakeSubscriber(tb, c, SubscriberConfig{Group: group, Topic: topic})
		},
	})
	// Close (in RunKilledBeforeAck) persists the offsets by one-way requests.
	testenv.WaitFor(t, 5*time.Second, 20*time.Millisecond, "[ack commits] the offset past the message committed", func() bool {
		return committed(c, group, topic) == 1
	})
}

// committed sums the group's committed offsets over topic's queues.
func committed(c *rmqfake.Cluster, group, topic string) int64 {
	var sum int64
	for q := range 4 {
		if off, ok := c.CommittedOffset(group, topic, q); ok {
			sum += off
		}
	}
	return sum
}
