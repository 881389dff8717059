package nats_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	heraldnats "github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/natsembed"
)

func event(dest string) broker.Message {
	return broker.Message{Destination: dest, Event: herald.Event{
		ID: herald.NewID(), Topic: "t", Type: "T", PartitionKey: "k", Payload: []byte("{}"),
	}}
}

func publishOne(p broker.Publisher, m broker.Message, timeout time.Duration) broker.Result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.Publish(ctx, []broker.Message{m})[0]
}

// A subject that no stream covers is a retryable error that says so.
func TestNoStreamIsRetryableAndClear(t *testing.T) {
	srv := startEmbedded(t, natsembed.Config{Dir: t.TempDir(), Port: natsembed.RandomPort})
	t.Cleanup(srv.Shutdown)
	p, err := heraldnats.New(context.Background(), heraldnats.Config{URL: srv.ClientURL(), Stream: "NONE"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	r := publishOne(p, event("nowhere.at.all"), 5*time.Second)
	if r.Err == nil || herald.IsPermanent(r.Err) || herald.IsAmbiguous(r.Err) {
		t.Fatalf("got %v, want a retryable error", r.Err)
	}
	if !strings.Contains(r.Err.Error(), "no stream covers subject") {
		t.Errorf("error %q does not say that no stream covers the subject", r.Err)
	}
}

// New succeeds while the server is down; publishing fails fast and
// retryably, then works once the server is up, the stream created late.
func TestStartWithServerDown(t *testing.T) {
	port := freePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	p, err := heraldnats.New(context.Background(), heraldnats.Config{URL: url, CreateStream: true})
	if err != nil {
		t.Fatalf("New with the server down: %v", err)
	}
	defer p.Close()
	start := time.Now()
	r := publishOne(p, event("herald.x"), 2*time.Second)
	if r.Err == nil || herald.IsPermanent(r.Err) || time.Since(start) > 2500*time.Millisecond {
		t.Fatalf("publish with the server down: %v after %v, want a fast retryable error", r.Err, time.Since(start))
	}
	srv := startEmbedded(t, natsembed.Config{Dir: t.TempDir(), Port: port})
	t.Cleanup(srv.Shutdown)
	deadline := time.Now().Add(15 * time.Second)
	m := event("herald.x")
	for {
		r = publishOne(p, m, 2*time.Second)
		if r.Err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after the server started: %v", r.Err)
		}
		time.Sleep(50 * time.Millisecond) // polling the reconnect, bounded
	}
	if r.Receipt.Stream != "HERALD" || r.Receipt.Sequence != 1 {
		t.Errorf("receipt %+v, want stream HERALD sequence 1", r.Receipt)
	}
}

// A message sent but never acknowledged is ambiguous, and Publish returns
// by ctx's deadline. A core subscriber that never replies stands in for a
// stream that does not answer.
func TestMissingAckIsAmbiguousByDeadline(t *testing.T) {
	srv := startEmbedded(t, natsembed.Config{Dir: t.TempDir(), Port: natsembed.RandomPort})
	t.Cleanup(srv.Shutdown)
	nc, err := natsgo.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("silent.>")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	p, err := heraldnats.New(context.Background(), heraldnats.Config{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	r := publishOne(p, event("silent.x"), 300*time.Millisecond)
	if !herald.IsAmbiguous(r.Err) {
		t.Fatalf("got %v, want an ambiguous error", r.Err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Publish took %v with a 300ms deadline", d)
	}
}
