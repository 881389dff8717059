package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testAddr = "127.0.0.1:6379"

// requireRedis skips when the server is down, or fails under CI=true.
func requireRedis(t testing.TB) {
	t.Helper()
	testenv.RequireTCP(t, "redis at "+testAddr, testAddr)
}

// stream returns a fresh stream name, deleted when the test ends.
func stream(t testing.TB) string {
	name := "herald-test-" + herald.NewID()
	t.Cleanup(func() {
		c := goredis.NewClient(&goredis.Options{Addr: testAddr})
		defer c.Close()
		c.Del(context.Background(), name)
	})
	return name
}

func newPublisher(t testing.TB, cfg Config) *Publisher {
	t.Helper()
	requireRedis(t)
	if cfg.URL == "" {
		cfg.URL = "redis://" + testAddr + "/0"
	}
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func message(dest, key string, n int) broker.Message {
	return broker.Message{Destination: dest, Event: herald.Event{
		ID: herald.NewID(), Tenant: "app1", Topic: "room", Type: "RoomOpened", PartitionKey: key,
		Headers: map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		Payload: fmt.Appendf(nil, `{"n":%d}`, n),
	}}
}

func TestPublishAppendsEntriesInOrder(t *testing.T) {
	p := newPublisher(t, Config{Source: "src"})
	s := stream(t)
	var msgs []broker.Message
	for i := range 50 {
		msgs = append(msgs, message(s, fmt.Sprint("k", i%4), i))
	}
	res := p.Publish(context.Background(), msgs)
	for i, r := range res {
		if r.Err != nil || r.Receipt.MessageID == "" || r.Receipt.Stream != s {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	entries, err := p.client.XRange(context.Background(), s, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(msgs) {
		t.Fatalf("stream has %d entries, want %d", len(entries), len(msgs))
	}
	for i, e := range entries {
		m := msgs[i]
		want := map[string]string{
			"payload": string(m.Event.Payload), "ce-id": m.Event.ID, "ce-type": "RoomOpened",
			"ce-source": "src", "ce-subject": m.Event.PartitionKey, "ce-tenant": "app1",
			"ce-specversion": "1.0", "traceparent": m.Event.Headers["traceparent"],
		}
		for k, v := range want {
			if e.Values[k] != v {
				t.Fatalf("entry %d field %s = %v, want %q", i, k, e.Values[k], v)
			}
		}
		if e.ID != res[i].Receipt.MessageID {
			t.Fatalf("entry %d id %s, receipt %s", i, e.ID, res[i].Receipt.MessageID)
		}
	}
}

func TestMaxLenTrimsApproximately(t *testing.T) {
	p := newPublisher(t, Config{MaxLen: 10})
	s := stream(t)
	var msgs []broker.Message
	for i := range 1000 {
		msgs = append(msgs, message(s, "", i))
	}
	for _, r := range p.Publish(context.Background(), msgs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	n, err := p.client.XLen(context.Background(), s).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 || n >= 1000 {
		t.Fatalf("stream length %d after 1000 XADDs with MAXLEN ~ 10", n)
	}
}

func TestPublishClassifiesErrors(t *testing.T) {
	p := newPublisher(t, Config{MaxPayload: 100})
	s := stream(t)
	if err := p.client.Set(context.Background(), s, "not a stream", 0).Err(); err != nil {
		t.Fatal(err)
	}
	big := message(s+"x", "", 0)
	big.Event.Payload = make([]byte, 101)
	clash := message(s+"x", "", 0)
	clash.Event.Headers["payload"] = "x"
	res := p.Publish(context.Background(), []broker.Message{message(s, "", 0), big, clash, message("", "", 0)})
	if !herald.IsPermanent(res[0].Err) || !strings.Contains(res[0].Err.Error(), "WRONGTYPE") {
		t.Errorf("WRONGTYPE: want permanent, got %v", res[0].Err)
	}
	if !errors.Is(res[1].Err, herald.ErrPayloadTooLarge) {
		t.Errorf("too large: %v", res[1].Err)
	}
	for i := 2; i < 4; i++ {
		if !herald.IsPermanent(res[i].Err) {
			t.Errorf("result %d: want permanent, got %v", i, res[i].Err)
		}
	}
}

func TestUnreachableServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := New(ctx, Config{URL: "redis://:secretpw@" + addr}); err == nil || strings.Contains(err.Error(), "secretpw") {
		t.Fatalf("New against a closed port: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	cases := map[string]Config{
		"max_len":      {MaxLen: -1},
		"max_payload":  {MaxPayload: maxBulkLen + 1},
		"dial_timeout": {DialTimeout: -1},
		"pool_size":    {PoolSize: -1},
		"url":          {URL: "http://user:secretpw@x"},
	}
	for field, cfg := range cases {
		_, err := New(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), field) || strings.Contains(err.Error(), "secretpw") {
			t.Errorf("%s: got %v", field, err)
		}
	}
}

func TestPublishAfterClose(t *testing.T) {
	p := newPublisher(t, Config{})
	p.Close()
	if res := p.Publish(context.Background(), []broker.Message{message("x", "", 0)}); !errors.Is(res[0].Err, ErrClosed) {
		t.Fatalf("want ErrClosed, got %v", res[0].Err)
	}
}
