package pubsub

import (
	"context"
	"os"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector/projectortest"
)

func TestMain(m *testing.M) {
	projectortest.CrashChild(openCrashChild)
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

const testProject = "herald-test"

// fake is an in-process Pub/Sub (pstest) on its own port.
func fake(t testing.TB, opts ...pstest.ServerReactorOption) *pstest.Server {
	t.Helper()
	srv := pstest.NewServer(opts...)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// admin is a client of the server at addr for the test's own calls.
func admin(t testing.TB, addr string) *pubsub.Client {
	t.Helper()
	c, err := newClient(context.Background(), Config{Project: testProject, EmulatorHost: addr}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// topicWithReader creates topic and a subscription "<topic>-read" on it
// (message ordering on) that the test reads what was stored from.
func topicWithReader(t testing.TB, c *pubsub.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := Config{Project: testProject}
	createTopic(t, c, topic)
	_, err := c.SubscriptionAdminClient.CreateSubscription(ctx, &pb.Subscription{Name: cfg.fullName("subscriptions", topic+"-read"),
		Topic: cfg.fullName("topics", topic), AckDeadlineSeconds: 60, EnableMessageOrdering: true})
	if err != nil {
		t.Fatalf("create subscription on %s: %v", topic, err)
	}
	t.Cleanup(func() { // pstest runs a goroutine per subscription
		ctx := context.Background()
		_ = c.SubscriptionAdminClient.DeleteSubscription(ctx, &pb.DeleteSubscriptionRequest{Subscription: cfg.fullName("subscriptions", topic+"-read")})
		_ = c.TopicAdminClient.DeleteTopic(ctx, &pb.DeleteTopicRequest{Topic: cfg.fullName("topics", topic)})
	})
}

// createTopic creates topic.
func createTopic(t testing.TB, c *pubsub.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: Config{Project: testProject}.fullName("topics", topic)}); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// readStored pulls topic's reader subscription until it has want messages
// or 3s pass, acking them, in the order Pub/Sub delivers.
func readStored(t testing.TB, c *pubsub.Client, topic string, want int) []*pb.PubsubMessage {
	t.Helper()
	sub := Config{Project: testProject}.fullName("subscriptions", topic+"-read")
	deadline := time.Now().Add(3 * time.Second)
	var out []*pb.PubsubMessage
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		resp, err := c.SubscriptionAdminClient.Pull(ctx, &pb.PullRequest{Subscription: sub, MaxMessages: 1000})
		cancel()
		if err == nil && len(resp.ReceivedMessages) > 0 {
			var ids []string
			for _, m := range resp.ReceivedMessages {
				out = append(out, m.Message)
				ids = append(ids, m.AckId)
			}
			_ = c.SubscriptionAdminClient.Acknowledge(context.Background(), &pb.AcknowledgeRequest{Subscription: sub, AckIds: ids})
			continue
		}
		if len(out) >= want {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
	return out
}

func newPublisher(t testing.TB, cfg Config) *Publisher {
	t.Helper()
	if cfg.Project == "" {
		cfg.Project = testProject
	}
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func publish(p broker.Publisher, msgs ...broker.Message) []broker.Result {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.Publish(ctx, msgs)
}

// target runs the suite against the server at addr (pstest or the
// emulator), each setup through a proxy the outage test stops and starts.
func target(addr string) brokertest.Target {
	return brokertest.Target{
		Guarantees:   (&Publisher{}).Guarantees(),
		HeaderPrefix: HeaderPrefix,
		New: func(t *testing.T) *brokertest.Setup {
			c := admin(t, addr)
			px := testenv.StartProxy(t, addr)
			p := newPublisher(t, Config{EmulatorHost: px.Addr, MaxPayload: 64 << 10})
			prefix := testenv.Name("herald-conf")
			return &brokertest.Setup{
				Publisher: p,
				Destination: func(name string) string {
					topicWithReader(t, c, prefix+"-"+name)
					return prefix + "-" + name
				},
				Read: func(t *testing.T, dest string, want int) []brokertest.Received {
					var out []brokertest.Received
					for _, m := range readStored(t, c, dest, want) {
						out = append(out, brokertest.Received{Headers: m.Attributes, Body: m.Data, MessageID: m.MessageId, Key: m.OrderingKey})
					}
					return out
				},
				Stop:  func(t *testing.T) { px.Stop(t) },
				Start: func(t *testing.T) { px.Start(t) },
			}
		},
	}
}

// TestConformance runs the broker suite against pstest, the official
// in-process fake.
func TestConformance(t *testing.T) {
	brokertest.Run(t, target(fake(t).Addr))
}

// TestConformanceEmulator runs the suite against the Pub/Sub emulator
// when PUBSUB_EMULATOR_HOST names one.
func TestConformanceEmulator(t *testing.T) {
	addr := os.Getenv("PUBSUB_EMULATOR_HOST")
	if addr == "" {
		t.Skip("PUBSUB_EMULATOR_HOST is not set: no emulator to run against")
	}
	brokertest.Run(t, target(addr))
}
