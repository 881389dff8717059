package relay

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/store"
)

// Rule: a failed publish is retried after its backoff, not before.
func TestRetryWaitsForBackoff(t *testing.T) {
	e := newEnv(t)
	e.enqueue(events("b", "", 1)...)
	e.pub.FailEvent("b-000", 2, errors.New("broker hiccup"))
	start := time.Now()
	e.start(e.lane(func(l *Lane) {
		l.Retry = Retry{Initial: 100 * time.Millisecond, Max: time.Second, MaxAttempts: 5, Jitter: JitterNone}
	}))
	waitFor(t, 5*time.Second, "delivery after two failures", func() bool { return e.stats().Delivered == 1 })
	// Backoffs 100ms then 200ms: nothing may arrive before 300ms.
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("delivered after %s; backoff of 100ms + 200ms was not respected", took)
	}
	if rec := e.get("b-000"); rec.Attempts != 3 {
		t.Fatalf("attempts = %d, want 3 (two failures, one success)", rec.Attempts)
	}
}

func TestBackoffIsExponentialCappedAndOverflowSafe(t *testing.T) {
	r := Retry{Initial: time.Second, Max: time.Minute, Jitter: JitterNone}.WithDefaults()
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	for i, w := range want {
		if got := r.Backoff(i + 1); got != w {
			t.Fatalf("attempt %d: backoff %s, want %s", i+1, got, w)
		}
	}
	if got := r.Backoff(1000); got != time.Minute {
		t.Fatalf("attempt 1000: backoff %s, want the cap %s (no overflow)", got, time.Minute)
	}
	huge := Retry{Initial: time.Duration(1 << 62), Max: time.Duration(1<<63 - 1), Jitter: JitterNone}
	if got := huge.Backoff(5); got <= 0 {
		t.Fatalf("backoff overflowed to %s", got)
	}
	full := Retry{Initial: time.Second, Max: time.Minute, Jitter: JitterFull}
	for range 100 {
		if d := full.Backoff(3); d < 0 || d > 4*time.Second {
			t.Fatalf("full jitter gave %s outside [0, 4s]", d)
		}
	}
}

// Rule: after max_attempts failures an event is dead, with its last error.
func TestDeadAfterMaxAttempts(t *testing.T) {
	e := newEnv(t)
	e.enqueue(events("d", "", 1)...)
	e.pub.FailEvent("d-000", 100, errors.New("connection refused"))
	r := e.start(e.lane(func(l *Lane) { l.Retry.MaxAttempts = 3 }))
	waitFor(t, 5*time.Second, "dead", func() bool { return e.stats().Dead == 1 })
	rec := e.get("d-000")
	if rec.Attempts != 3 || !strings.Contains(rec.LastError, "connection refused") {
		t.Fatalf("dead row = attempts %d, last_error %q; want 3 and the broker's error", rec.Attempts, rec.LastError)
	}
	if n := r.total(func(s BatchStats) int { return s.Retried }); n != 2 {
		t.Fatalf("retried %d times, want 2", n)
	}
}

// Rule: a permanent error goes to dead at once, and an oversized payload
// is permanent without ever reaching the broker.
func TestPermanentErrorsAndOversizePayloadsDieAtOnce(t *testing.T) {
	e := newEnv(t)
	e.pub = memory.New(memory.Config{MaxPayload: 100})
	big := herald.Event{ID: "big", Topic: "t", Type: "Big", Payload: make([]byte, 200)}
	e.enqueue(big, herald.Event{ID: "bad", Topic: "t", Type: "Bad", Payload: []byte("{}")})
	e.pub.FailEvent("bad", 1, herald.Permanent(errors.New("schema rejected")))
	e.start(e.lane())
	waitFor(t, 5*time.Second, "two dead", func() bool { return e.stats().Dead == 2 })
	for _, id := range []string{"big", "bad"} {
		if rec := e.get(id); rec.Attempts != 1 {
			t.Fatalf("%s: attempts = %d; a permanent failure must not be retried", id, rec.Attempts)
		}
	}
	if !strings.Contains(e.get("big").LastError, "payload too large") || e.pub.Count("big") != 0 {
		t.Fatalf("oversize payload: last_error %q, published %d times", e.get("big").LastError, e.pub.Count("big"))
	}
}

// Rule: a failing before-publish step keeps the event retryable and it is
// not published until the step succeeds.
func TestBeforePublishFailureKeepsEventRetryable(t *testing.T) {
	e := newEnv(t)
	e.enqueue(events("h", "", 1)...)
	calls := 0
	e.start(e.lane(func(l *Lane) {
		l.BeforePublish = func(ctx context.Context, m broker.Message) error {
			calls++ // one worker: no race
			if calls < 3 {
				return errors.New("scheduler down")
			}
			return nil
		}
	}))
	waitFor(t, 5*time.Second, "delivered", func() bool { return e.stats().Delivered == 1 })
	if rec := e.get("h-000"); rec.Attempts != 3 || e.pub.Count("h-000") != 1 {
		t.Fatalf("attempts %d, published %d; want 3 and 1", rec.Attempts, e.pub.Count("h-000"))
	}
}

// Rule: a lost ack (ambiguous) is retried; the event reaches the broker
// again and the row ends delivered: at least once.
func TestAmbiguousFailureIsRetried(t *testing.T) {
	e := newEnv(t)
	e.enqueue(events("x", "", 1)...)
	e.pub.LoseAck("x-000", 1)
	e.start(e.lane())
	waitFor(t, 5*time.Second, "delivered", func() bool { return e.stats().Delivered == 1 })
	if n := e.pub.Count("x-000"); n != 2 {
		t.Fatalf("stored %d times; an ambiguous failure must be retried", n)
	}
	if rec := e.get("x-000"); rec.Status != store.StatusDelivered {
		t.Fatalf("row %+v", rec)
	}
}
