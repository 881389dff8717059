package pubsub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/heraldhq/herald"
)

// Tail calls fn for each message published to topic from now on, until
// ctx ends, then returns nil. It creates a subscription of its own
// (deleted when it returns; Pub/Sub expires it after a day unused if that
// fails), so the lane's subscriptions lose nothing; ready, if not nil, is
// called once it exists.
func Tail(ctx context.Context, conn Config, topic string, ready func(), fn func(topic string, ev herald.Event)) error {
	conn = conn.WithDefaults()
	client, err := newClient(ctx, conn)
	if err != nil {
		return err
	}
	defer client.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := conn.fullName("subscriptions", "herald-tail-"+hex.EncodeToString(b[:]))
	_, err = client.SubscriptionAdminClient.CreateSubscription(ctx, &pb.Subscription{
		Name: name, Topic: conn.fullName("topics", topic), AckDeadlineSeconds: 10,
		ExpirationPolicy: &pb.ExpirationPolicy{Ttl: durationpb.New(24 * time.Hour)},
	})
	if err != nil {
		return fmt.Errorf("pubsub: tail %s: create a subscription: %w", topic, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = client.SubscriptionAdminClient.DeleteSubscription(dctx, &pb.DeleteSubscriptionRequest{Subscription: name})
	}()
	if ready != nil {
		ready()
	}
	err = client.Subscriber(name).Receive(ctx, func(_ context.Context, m *pubsub.Message) {
		m.Ack()
		fn(topic, MessageEvent(m))
	})
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("pubsub: tail %s: %w", topic, err)
}
