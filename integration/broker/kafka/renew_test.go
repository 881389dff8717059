package kafka

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/heraldhq/herald/broker"
	. "github.com/heraldhq/herald/broker/kafka"
)

// Rule: a producer whose produces go unanswered is replaced after
// stallLimit publishes in a row time out, and the next publish goes
// through the new one. The cluster here never answers a produce of the
// first producer id it sees (a wedged producer session); without the
// renewal every publish after those timed out too.
func TestStalledProducerIsReplaced(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var mu sync.Mutex
	wedged, answered := int64(-1), int64(-1)
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		pid := producerID(req.(*kmsg.ProduceRequest))
		if wedged < 0 {
			wedged = pid
		}
		if pid != wedged {
			answered = pid
		}
		return nil, nil, pid == wedged // handled with no answer: the client waits
	})
	p := newPublisher(t, Config{Brokers: c.ListenAddrs(), ClientID: "herald-stall"})
	publish := func(within time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		return p.Publish(ctx, []broker.Message{message("events", "k", 1)})[0].Err
	}
	for i := range stallLimit {
		if err := publish(time.Second); err == nil {
			t.Fatalf("publish %d went through a producer the cluster never answers", i+1)
		}
	}
	if err := publish(10 * time.Second); err != nil {
		t.Fatalf("after %d stalled publishes: %v, want the renewed producer to deliver", stallLimit, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if answered < 0 || answered == wedged {
		t.Fatalf("the cluster answered producer id %d, want a new one beside the wedged %d", answered, wedged)
	}
}

// stallLimit is the publisher's own (renew.go), unexported there: if it
// changes, the count of failed publishes above no longer matches and the
// test fails instead of passing.
const stallLimit = 3

// producerID is the producer id of a produce request's first batch.
func producerID(req *kmsg.ProduceRequest) int64 {
	for _, tp := range req.Topics {
		for _, pp := range tp.Partitions {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(pp.Records); err == nil {
				return b.ProducerID
			}
		}
	}
	return -1
}
