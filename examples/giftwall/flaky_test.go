package giftwall_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/examples/giftwall"
)

// TestFlakyKeepsKeyOrder: Flaky fails about the fraction asked, and after
// a message of a key fails, no later message of that key in the batch is
// sent (the publisher contract the relay's ordering relies on).
func TestFlakyKeepsKeyOrder(t *testing.T) {
	inner := memory.New(memory.Config{})
	f, err := giftwall.NewFlaky(inner, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for batch := range 50 {
		msgs := make([]broker.Message, 40)
		for i := range msgs {
			msgs[i] = broker.Message{Destination: "d", Event: herald.Event{ID: fmt.Sprintf("%d-%d", batch, i),
				Topic: "t", Type: "T", PartitionKey: fmt.Sprint(i % 4)}}
		}
		failed := map[string]bool{}
		for i, r := range f.Publish(context.Background(), msgs) {
			key := msgs[i].Event.PartitionKey
			if r.Err == nil && failed[key] {
				t.Fatalf("batch %d: message %d of key %s sent after an earlier one of its key failed", batch, i, key)
			}
			if r.Err != nil {
				failed[key] = true
			}
		}
		total += len(msgs)
	}
	if int64(len(inner.Records()))+f.Failed() > int64(total) {
		t.Fatalf("an injected failure reached the broker")
	}
	// Without keys nothing is held back: the failures are the fraction asked.
	before := f.Failed()
	msgs := make([]broker.Message, 2000)
	for i := range msgs {
		msgs[i] = broker.Message{Destination: "d", Event: herald.Event{ID: fmt.Sprint("u", i), Topic: "t", Type: "T"}}
	}
	f.Publish(context.Background(), msgs)
	if rate := float64(f.Failed()-before) / float64(len(msgs)); rate < 0.25 || rate > 0.35 {
		t.Fatalf("injected failure rate %.2f, want about 0.3", rate)
	}
	if _, err := giftwall.NewFlaky(inner, 1.5); err == nil {
		t.Fatal("a fail rate of 1.5 was accepted")
	}
	all, _ := giftwall.NewFlaky(inner, 1)
	res := all.Publish(context.Background(), []broker.Message{{Event: herald.Event{ID: "x", Topic: "t", Type: "T"}}})
	if !errors.Is(res[0].Err, giftwall.ErrInjected) {
		t.Fatalf("fail rate 1: %v", res[0].Err)
	}
}

// TestDemoConfigHasTheLanes: the embedded demo config parses and names
// the lanes the demo needs.
func TestDemoConfigHasTheLanes(t *testing.T) {
	f, err := giftwall.DemoConfig(drv)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range giftwall.LaneNames {
		if _, err := f.Lane(name); err != nil {
			t.Fatal(err)
		}
	}
	if e := f.Brokers["events"].Config.(*nats.BrokerConfig).Embedded; e == nil || e.Port != -1 {
		t.Fatalf("the demo's NATS server must be embedded on a random port, got %+v", e)
	}
}

// TestMariaDBConfigParses: the README's MariaDB + NATS config is valid and
// has the demo's lanes.
func TestMariaDBConfigParses(t *testing.T) {
	f, err := config.Load("mariadb.yaml", drv)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range giftwall.LaneNames {
		if _, err := f.Lane(name); err != nil {
			t.Fatal(err)
		}
	}
	n, isNATS := f.Brokers["events"].Config.(*nats.BrokerConfig)
	if f.Store.Driver != "mysql" || !isNATS || n.Embedded != nil {
		t.Fatalf("mariadb.yaml: store %s, broker %+v; want mysql and an external nats", f.Store.Driver, f.Brokers["events"])
	}
}
