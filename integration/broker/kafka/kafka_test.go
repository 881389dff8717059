package kafka

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	. "github.com/heraldhq/herald/broker/kafka"
)

func TestMain(m *testing.M) {
	if job := os.Getenv(memberEnv); job != "" {
		runMember(job) // a group member process of TestClusterFailover
	}
	goleak.VerifyTestMain(m)
}

// cluster is a kfake cluster on a fixed loopback port with its data in a
// test directory, so it can be stopped and started with the same log.
type cluster struct {
	t      testing.TB
	port   int
	dir    string
	topics []string
	opts   []kfake.Opt
	c      *kfake.Cluster
}

func startCluster(t testing.TB, partitions int32, topics []string, opts ...kfake.Opt) *cluster {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cl := &cluster{t: t, port: port, dir: t.TempDir(), topics: topics,
		opts: append([]kfake.Opt{kfake.SeedTopics(partitions, topics...)}, opts...)}
	cl.start(t)
	t.Cleanup(func() { cl.stop(t) })
	return cl
}

func (cl *cluster) addr() string { return "127.0.0.1:" + strconv.Itoa(cl.port) }

func (cl *cluster) start(t testing.TB) {
	t.Helper()
	opts := append([]kfake.Opt{kfake.NumBrokers(1), kfake.Ports(cl.port), kfake.DataDir(cl.dir),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, cl.addr()) }),
	}, cl.opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	cl.c = c
}

func (cl *cluster) stop(testing.TB) {
	if cl.c != nil {
		cl.c.Close()
		cl.c = nil
	}
}

// consume reads topic from the start until want records or 5s pass.
func consume(t *testing.T, addr, topic string, want int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	c, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want && ctx.Err() == nil {
		fs := c.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

func newPublisher(t testing.TB, cfg Config) *Publisher {
	t.Helper()
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func message(topic, key string, n int) broker.Message {
	return broker.Message{Destination: topic, Event: herald.Event{
		ID: herald.NewID(), Tenant: "app1", Topic: "room", Type: "RoomOpened", PartitionKey: key,
		Payload: fmt.Appendf(nil, `{"key":%q,"n":%d}`, key, n),
	}}
}

// TestConformance runs the broker suite against kfake; each setup has its
// own cluster, which the outage test stops and starts again.
func TestConformance(t *testing.T) {
	brokertest.Run(t, brokertest.Target{
		Guarantees:   (&Publisher{}).Guarantees(),
		Key:          true,
		HeaderPrefix: HeaderPrefix,
		New: func(t *testing.T) *brokertest.Setup {
			topics := []string{"batch", "concurrent", "contract", "dedupe", "order", "holdback", "limits", "outage", "close", "collide"}
			cl := startCluster(t, 3, topics)
			p := newPublisher(t, Config{Brokers: []string{cl.addr()}, MaxPayload: 64 << 10})
			return &brokertest.Setup{
				Publisher:   p,
				Destination: func(name string) string { return name },
				Read: func(t *testing.T, dest string, want int) []brokertest.Received {
					var out []brokertest.Received
					for _, r := range consume(t, cl.addr(), dest, want) {
						h := map[string]string{}
						for _, x := range r.Headers {
							h[x.Key] = string(x.Value)
						}
						out = append(out, brokertest.Received{Destination: r.Topic, Headers: h, Body: r.Value, Key: string(r.Key)})
					}
					return out
				},
				Stop:  func(t *testing.T) { cl.stop(t) },
				Start: func(t *testing.T) { cl.start(t) },
			}
		},
	})
}

// TestConsumerReadsKeysInOrder: records of one key land on one partition in
// publish order, across several batches, as a consumer sees them.
func TestConsumerReadsKeysInOrder(t *testing.T) {
	cl := startCluster(t, 8, []string{"events"})
	p := newPublisher(t, Config{Brokers: []string{cl.addr()}})
	const keys, batches, perBatch = 10, 5, 200
	for b := range batches {
		msgs := make([]broker.Message, perBatch)
		for i := range msgs {
			n := b*perBatch + i
			msgs[i] = message("events", fmt.Sprint("user-", n%keys), n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res := p.Publish(ctx, msgs)
		cancel()
		for i, r := range res {
			if r.Err != nil {
				t.Fatalf("batch %d message %d: %v", b, i, r.Err)
			}
		}
	}
	recs := consume(t, cl.addr(), "events", keys*0+batches*perBatch)
	if len(recs) != batches*perBatch {
		t.Fatalf("consumed %d records, want %d", len(recs), batches*perBatch)
	}
	last := map[string]int{}
	partOf := map[string]int32{}
	for _, r := range recs {
		k := string(r.Key)
		var n int
		fmt.Sscanf(strings.SplitN(string(r.Value), `"n":`, 2)[1], "%d", &n)
		if prev, ok := last[k]; ok && n <= prev {
			t.Fatalf("key %s: record %d consumed after %d", k, n, prev)
		}
		if p, ok := partOf[k]; ok && p != r.Partition {
			t.Fatalf("key %s on partitions %d and %d", k, p, r.Partition)
		}
		last[k], partOf[k] = n, r.Partition
	}
	if len(partOf) != keys {
		t.Fatalf("saw %d keys, want %d", len(partOf), keys)
	}
}

func TestSASL(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			cl := startCluster(t, 1, []string{"t"}, kfake.EnableSASL(), kfake.Superuser(mech, "herald", "s3cret"))
			t.Setenv("HERALD_TEST_KAFKA_PASSWORD", "s3cret")
			p := newPublisher(t, Config{Brokers: []string{cl.addr()},
				SASL: &SASLConfig{Mechanism: mech, Username: "herald", PasswordEnv: "HERALD_TEST_KAFKA_PASSWORD"}})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if res := p.Publish(ctx, []broker.Message{message("t", "k", 0)}); res[0].Err != nil {
				t.Fatalf("publish with SASL %s: %v", mech, res[0].Err)
			}
		})
	}
}

// TestSubscriberSASL consumes from a cluster that requires SASL: with the
// credentials in SubscriberConfig the published record arrives (without
// them the cluster refuses the connection and nothing would).
func TestSubscriberSASL(t *testing.T) {
	cl := startCluster(t, 1, []string{"t"}, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "herald", "s3cret"))
	creds := func(pass string) *SASLConfig {
		return &SASLConfig{Mechanism: "SCRAM-SHA-256", Username: "herald", Password: pass}
	}
	p := newPublisher(t, Config{Brokers: []string{cl.addr()}, SASL: creds("s3cret")})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if res := p.Publish(ctx, []broker.Message{message("t", "k", 0)}); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	subscribe := func(pass string) *Subscriber {
		s, err := NewSubscriber(ctx, SubscriberConfig{Brokers: []string{cl.addr()}, Group: "g-" + pass,
			Topics: []string{"t"}, SASL: creds(pass)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	got, err := subscribe("s3cret").Receive(ctx, 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("receive with SASL: %d records, %v", len(got), err)
	}
}

func TestUnknownTopicIsRetryable(t *testing.T) {
	cl := startCluster(t, 1, []string{"t"})
	p := newPublisher(t, Config{Brokers: []string{cl.addr()}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	res := p.Publish(ctx, []broker.Message{message("no-such-topic", "k", 0)})
	if res[0].Err == nil || herald.IsPermanent(res[0].Err) {
		t.Fatalf("want a retryable error, got %v", res[0].Err)
	}
}

func TestConfigValidation(t *testing.T) {
	cases := map[string]Config{
		"brokers[0]":      {Brokers: []string{"nohost"}},
		"max_payload":     {MaxPayload: -1},
		"max_batch_bytes": {MaxPayload: 2 << 20},
		"dial_timeout":    {DialTimeout: -1},
		"sasl.mechanism":  {SASL: &SASLConfig{Mechanism: "GSSAPI", Username: "u", Password: "secretpw"}},
		"sasl.username":   {SASL: &SASLConfig{Mechanism: "PLAIN", Password: "secretpw"}},
		"sasl.password":   {SASL: &SASLConfig{Mechanism: "PLAIN", Username: "u"}},
		"tls.ca_file":     {TLS: &TLSConfig{CAFile: "/nonexistent/ca.pem"}},
		"tls.cert_file":   {TLS: &TLSConfig{CertFile: "c.pem"}},
		"dial_via":        {DialVia: map[string]string{"a:1": "b:2"}, TLS: &TLSConfig{}},
	}
	for field, cfg := range cases {
		_, err := New(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), field) || strings.Contains(err.Error(), "secretpw") {
			t.Errorf("%s: got %v", field, err)
		}
	}
}
