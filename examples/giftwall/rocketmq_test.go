package giftwall_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/rocketmq"
	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
	"github.com/heraldhq/herald/examples/giftwall"
	"github.com/heraldhq/herald/store"
)

// walletTopic is the wallet lane's RocketMQ topic (topic names allow no
// dots, so not the NATS subject template).
const walletTopic = "giftwall_wallet"

// TestGiftWallOnRocketMQ runs the wallet lane on RocketMQ (rmqfake, the
// official client) with the seed system's wallet message as the body, and
// the gift wall projected from a RocketMQ consumer group: once all is
// delivered the wall equals the ledger, and every message carries the
// wallet message, the tag of the mode (one constant, or the event type)
// and the keys event id, transaction id, command id.
func TestGiftWallOnRocketMQ(t *testing.T) {
	modes := []struct {
		name string
		cfg  rocketmq.Config
		tag  string
	}{
		{"constant tag", rocketmq.Config{TagMode: rocketmq.TagConstant, Tag: "wallet"}, "wallet"},
		{"event type tag", rocketmq.Config{TagMode: rocketmq.TagEventType}, giftwall.WalletGiftDebited},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, s store.Store) {
				c, err := rmqfake.New(rmqfake.Options{MaxLongPoll: 200 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				a := newApp(t, s, giftwall.Config{WalletMessages: true})
				cfg := mode.cfg
				cfg.NameServers = []string{c.NameServer()}
				cfg.KeyHeaders = []string{"transaction_id", "command_id"}
				runWalletOnRocketMQ(t, a, s, cfg, []string{mode.tag})
				checkWalletMessages(t, c, mode.tag)
			})
		})
	}
}

// runWalletOnRocketMQ relays the wallet lane through a RocketMQ publisher
// on cfg, projects the gift wall from a subscriber filtering tags, sends
// 200 gifts and waits until the wall matches the ledger.
func runWalletOnRocketMQ(t *testing.T, a *giftwall.App, s store.Store, cfg rocketmq.Config, tags []string) {
	t.Helper()
	ctx := context.Background()
	pub, err := rocketmq.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	wallet := laneOf(a.Lanes(pub, time.Minute), "wallet")
	wallet.Destination = broker.MustParseTemplate(walletTopic)
	runRelay(t, s, nil, wallet)
	sub, err := rocketmq.NewSubscriber(ctx, rocketmq.SubscriberConfig{NameServers: cfg.NameServers,
		Group: giftwall.ProjectionName, Topic: walletTopic, Tags: tags})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.NewProjector(quiet())
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(pctx, sub) }()
	t.Cleanup(func() { cancel(); <-done; _ = sub.Close() })

	if err := a.Seed(ctx, giftwall.DefaultTenants); err != nil {
		t.Fatal(err)
	}
	var st giftwall.TrafficStats
	if err := a.Generate(ctx, giftwall.TrafficConfig{Gifts: 200, Seed: 11}, &st); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "200 gifts delivered and projected", func() bool {
		ps, err := s.ProjectionStats(ctx, a.Config().ProjectionTable, giftwall.ProjectionName)
		return err == nil && len(ps) == 1 && ps[0].Done+ps[0].Dead == 200
	})
	rep, err := a.Verify(ctx)
	if err != nil || !rep.OK() || rep.Gifts != 200 {
		t.Fatalf("[wall = ledger] %v, %v", rep, err)
	}
}

// checkWalletMessages checks every message on the wallet topic: the body is
// the wallet message, the tag is tag, the keys are event id, transaction
// id, command id.
func checkWalletMessages(t *testing.T, c *rmqfake.Cluster, tag string) {
	t.Helper()
	msgs := c.Messages(walletTopic)
	if len(msgs) < 200 {
		t.Fatalf("%d messages on %s, want at least 200", len(msgs), walletTopic)
	}
	for _, m := range msgs {
		var w giftwall.WalletMessage
		if err := json.Unmarshal(m.Body, &w); err != nil {
			t.Fatalf("[body] %s: %v", m.Body, err)
		}
		var g giftwall.GiftPayload
		if err := json.Unmarshal(w.Payload, &g); err != nil || g.Receiver == "" || g.GiftID == "" || g.Count < 1 {
			t.Fatalf("[body] payload %s: %v", w.Payload, err)
		}
		if !slices.Contains(giftwall.DefaultTenants, w.AppCode) || w.EventType != giftwall.WalletGiftDebited ||
			w.UserID == "" || w.AssetType == "" || len(w.Deltas) != 1 || w.Deltas[0].Available >= 0 || w.OccurredAt < 1e12 {
			t.Fatalf("[body] wallet message %+v", w)
		}
		want := []string{m.Properties[rocketmq.HeaderPrefix+"id"], w.TransactionID, w.CommandID}
		if m.Tags != tag || !slices.Equal(m.Keys, want) {
			t.Fatalf("[tag and keys] tag %q keys %q, want %q and %q", m.Tags, m.Keys, tag, want)
		}
	}
}
