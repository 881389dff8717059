package rocketmq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// TestIntegration publishes to a real RocketMQ when HERALD_ROCKETMQ_NAMESRV
// names its name server (host:port, comma-separated for several). The
// topic, HERALD_ROCKETMQ_TOPIC (default herald_test), must exist unless the
// broker auto-creates topics. There is no RocketMQ server on the CI
// machine, so this test skips there too.
func TestIntegration(t *testing.T) {
	ns := os.Getenv("HERALD_ROCKETMQ_NAMESRV")
	if ns == "" {
		t.Skip("HERALD_ROCKETMQ_NAMESRV is not set: no RocketMQ name server to test against")
	}
	topic := os.Getenv("HERALD_ROCKETMQ_TOPIC")
	if topic == "" {
		topic = "herald_test"
	}
	p, err := New(context.Background(), Config{
		NameServers: strings.Split(ns, ","), TagMode: TagConstant, Tag: "herald_test",
		KeyHeaders: []string{"transaction_id"}, Body: BodyEnvelope, MaxPayload: 64 << 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	var msgs []broker.Message
	for i := range 30 {
		msgs = append(msgs, broker.Message{Destination: topic, Event: herald.Event{
			ID: herald.NewID(), Tenant: "app1", Topic: "wallet", Type: "WalletGiftDebited",
			PartitionKey: fmt.Sprint("user-", i%3), Payload: fmt.Appendf(nil, `{"n":%d}`, i),
			Headers: map[string]string{"transaction_id": fmt.Sprint("tx-", i)}, CreatedAt: time.Now(),
		}})
	}
	big := msgs[0]
	big.Event.ID, big.Event.PartitionKey, big.Event.Payload = herald.NewID(), "big", make([]byte, 65<<10)
	msgs = append(msgs, big)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := p.Publish(ctx, msgs)
	queueOf := map[string]int32{}
	for i, r := range res[:len(res)-1] {
		if r.Err != nil {
			t.Fatalf("message %d: %v", i, r.Err)
		}
		k := msgs[i].Event.PartitionKey
		if q, ok := queueOf[k]; ok && q != r.Receipt.Partition {
			t.Errorf("key %s went to queues %d and %d", k, q, r.Receipt.Partition)
		}
		queueOf[k] = r.Receipt.Partition
	}
	if last := res[len(res)-1].Err; !errors.Is(last, herald.ErrPayloadTooLarge) {
		t.Errorf("oversize: want ErrPayloadTooLarge, got %v", last)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if r := p.Publish(ctx, msgs[:1]); !errors.Is(r[0].Err, ErrClosed) {
		t.Errorf("after Close: want ErrClosed, got %v", r[0].Err)
	}
}
