package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/heraldhq/herald/broker"
	. "github.com/heraldhq/herald/broker/kafka"
	"github.com/heraldhq/herald/internal/faultproxy"
)

// TestDialViaReachesEveryBrokerThroughItsProxy: on a cluster of three
// brokers, a publisher seeded with one proxy and given dial_via for every
// advertised address publishes through the proxies only: cut them all and
// the publish fails although every broker is up; let them pass again and
// it succeeds.
func TestDialViaReachesEveryBrokerThroughItsProxy(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(6, "via"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	via := map[string]string{}
	var proxies []*faultproxy.Proxy
	for _, addr := range c.ListenAddrs() {
		p, err := faultproxy.Start(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		via[addr], proxies = p.Addr(), append(proxies, p)
	}
	pub := newPublisher(t, Config{Brokers: []string{proxies[0].Addr()}, DialVia: via})
	publish := func(within time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		var msgs []broker.Message
		for n := range 12 { // keys spread over the partitions, so over every broker
			msgs = append(msgs, message("via", string(rune('a'+n)), n))
		}
		for _, r := range pub.Publish(ctx, msgs) {
			if r.Err != nil {
				return r.Err
			}
		}
		return nil
	}
	if err := publish(10 * time.Second); err != nil {
		t.Fatalf("publish through the proxies: %v", err)
	}
	for _, p := range proxies {
		if err := p.Set(faultproxy.Cut); err != nil {
			t.Fatal(err)
		}
	}
	if err := publish(time.Second); err == nil {
		t.Fatal("publish succeeded with every proxy cut: the client reached a broker past its proxy")
	}
	for _, p := range proxies {
		if err := p.Set(faultproxy.Pass); err != nil {
			t.Fatal(err)
		}
	}
	// The client reconnects with its own backoff, which grows under load
	// (CI once saw 10 s go by): publishing must come back, within a minute.
	deadline := time.Now().Add(time.Minute)
	for err := publish(10 * time.Second); err != nil; err = publish(10 * time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("publish after the cut, for a minute: %v", err)
		}
	}
}
