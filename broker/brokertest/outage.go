package brokertest

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// outageTimeout is the publish deadline while the broker is down; the
// publisher must return within it (plus a little slack).
const outageTimeout = 2 * time.Second

// recoverWithin bounds how long the publisher may take to work again once
// the broker is back (reconnect backoff included).
const recoverWithin = 30 * time.Second

func testOutage(t *testing.T, tg Target) {
	s := tg.New(t)
	if s.Stop == nil || s.Start == nil {
		t.Skip("the target has no Stop/Start hooks")
	}
	dest := s.Destination("outage")
	before := message(dest, "k", 0)
	requireOK(t, "outage.before", tg.publish(t, s, []broker.Message{before}))

	s.Stop(t)
	down := []broker.Message{message(dest, "k", 1), message(dest, "j", 2)}
	ctx, cancel := context.WithTimeout(context.Background(), outageTimeout)
	start := time.Now()
	res := s.Publisher.Publish(ctx, down)
	elapsed := time.Since(start)
	cancel()
	if elapsed > outageTimeout+time.Second {
		t.Errorf("[rule outage.returns-by-deadline] Publish to a stopped broker took %v, deadline %v", elapsed, outageTimeout)
	}
	if len(res) != len(down) {
		t.Fatalf("[rule batch.one-result-per-message] %d results for %d messages", len(res), len(down))
	}
	for i, r := range res {
		if r.Err == nil {
			t.Errorf("[rule outage.fails] message %d published to a stopped broker without error", i)
		} else if herald.IsPermanent(r.Err) {
			t.Errorf("[rule outage.not-permanent] message %d: an outage gave a permanent error: %v", i, r.Err)
		}
	}

	s.Start(t)
	after := message(dest, "k", 3)
	waitPublished(t, tg, s, after)
	got := tg.byEventID(s.Read(t, dest, 1))
	if len(got[after.Event.ID]) == 0 {
		t.Errorf("[rule outage.recovers] event %s published after the restart is not in the broker", after.Event.ID)
	}
}

// waitPublished retries m until the publisher accepts it or recoverWithin
// passes: the client reconnects on its own schedule, so poll.
func waitPublished(t *testing.T, tg Target, s *Setup, m broker.Message) {
	t.Helper()
	deadline := time.Now().Add(recoverWithin)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for time.Now().Before(deadline) {
		res := tg.publish(t, s, []broker.Message{m})
		if last = res[0].Err; last == nil {
			return
		}
		<-tick.C
	}
	t.Fatalf("[rule outage.recovers] publisher still failing %v after the broker came back: %v", recoverWithin, last)
}
