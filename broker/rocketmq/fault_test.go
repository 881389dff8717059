package rocketmq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
)

func fakeMessage(topic, key string) broker.Message {
	return broker.Message{Destination: topic, Attempt: 1, Event: herald.Event{ID: herald.NewID(), Tenant: "app1",
		Topic: "wallet", Type: "WalletGiftDebited", PartitionKey: key, Payload: []byte(`{"n":1}`),
		Headers: map[string]string{"transaction_id": "tx-1", "command_id": "cmd-1"}, CreatedAt: time.Now()}}
}

func publishOne(t *testing.T, p *Publisher, m broker.Message, timeout time.Duration) broker.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.Publish(ctx, []broker.Message{m})[0]
}

// TestBrokerAnswersClassified: each answer of the broker to a send becomes
// the right kind of result. Refusals (busy, illegal) stored nothing, so
// busy is plainly retryable and illegal permanent; flush timeouts stored
// the message unflushed, so they are ambiguous (retried, deduped by id).
func TestBrokerAnswersClassified(t *testing.T) {
	c := startFake(t)
	p := newFakePublisher(t, c, Config{Retries: -1})
	// The route lookup happens on the first send: warm it up.
	if r := publishOne(t, p, fakeMessage("faults", "k"), 5*time.Second); r.Err != nil {
		t.Fatal(r.Err)
	}
	cases := []struct {
		name                 string
		code                 int
		permanent, ambiguous bool
		stored               bool
		wantInError          string
	}{
		{"system busy", rmqfake.ResSystemBusy, false, false, false, "CODE: 2"},
		{"message illegal", rmqfake.ResMessageIllegal, true, false, false, "CODE: 13"},
		{"flush disk timeout", rmqfake.ResFlushDiskTimeout, false, true, true, "FLUSH_DISK_TIMEOUT"},
		{"flush slave timeout", rmqfake.ResFlushSlaveTimeout, false, true, true, "FLUSH_SLAVE_TIMEOUT"},
		{"slave not available", rmqfake.ResSlaveNotAvailable, false, false, true, "slave not available"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(c.Messages("faults"))
			c.FailSends(tc.code, 1)
			r := publishOne(t, p, fakeMessage("faults", "k"), 5*time.Second)
			if r.Err == nil {
				t.Fatal("want an error")
			}
			if herald.IsPermanent(r.Err) != tc.permanent || herald.IsAmbiguous(r.Err) != tc.ambiguous {
				t.Errorf("permanent=%v ambiguous=%v, want %v %v: %v", herald.IsPermanent(r.Err), herald.IsAmbiguous(r.Err),
					tc.permanent, tc.ambiguous, r.Err)
			}
			if !strings.Contains(r.Err.Error(), tc.wantInError) {
				t.Errorf("error %q does not name %q", r.Err, tc.wantInError)
			}
			if got := len(c.Messages("faults")) - before; (got == 1) != tc.stored {
				t.Errorf("%d messages stored, want stored=%v", got, tc.stored)
			}
		})
	}
}

// TestConnectionDroppedIsAmbiguous: the broker took the request and closed
// the connection unanswered: the message may be stored, so ambiguous; the
// next send reconnects.
func TestConnectionDroppedIsAmbiguous(t *testing.T) {
	c := startFake(t)
	p := newFakePublisher(t, c, Config{Retries: -1})
	if r := publishOne(t, p, fakeMessage("drop", "k"), 5*time.Second); r.Err != nil {
		t.Fatal(r.Err)
	}
	c.DropSends(1)
	r := publishOne(t, p, fakeMessage("drop", "k"), 2*time.Second)
	if r.Err == nil || herald.IsPermanent(r.Err) || !herald.IsAmbiguous(r.Err) {
		t.Fatalf("dropped connection: want an ambiguous error, got %v", r.Err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r = publishOne(t, p, fakeMessage("drop", "k"), 2*time.Second); r.Err == nil || time.Now().After(deadline) {
			break
		}
	}
	if r.Err != nil {
		t.Fatalf("after the drop: %v", r.Err)
	}
}

// TestStalledBrokerReturnsByDeadline: a broker that never answers costs a
// publish its deadline, no more, and the result is ambiguous.
func TestStalledBrokerReturnsByDeadline(t *testing.T) {
	c := startFake(t)
	p := newFakePublisher(t, c, Config{Retries: -1, SendTimeout: 5 * time.Second})
	if r := publishOne(t, p, fakeMessage("stall", "k"), 5*time.Second); r.Err != nil {
		t.Fatal(r.Err)
	}
	c.Stall()
	defer c.Release()
	start := time.Now()
	r := publishOne(t, p, fakeMessage("stall", "k"), time.Second)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("publish to a stalled broker took %v with a 1s deadline", d)
	}
	if r.Err == nil || !herald.IsAmbiguous(r.Err) {
		t.Fatalf("stalled broker: want an ambiguous error, got %v", r.Err)
	}
	if !errors.Is(r.Err, context.DeadlineExceeded) && !strings.Contains(r.Err.Error(), "timeout") {
		t.Logf("stall error: %v", r.Err)
	}
}
