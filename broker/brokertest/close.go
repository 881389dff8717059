package brokertest

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald/broker"
)

func testClose(t *testing.T, tg Target) {
	// Snapshot goroutines before the setup exists and check them after its
	// cleanups ran (cleanups run last-registered first, so this one is last).
	opts := append([]goleak.Option{goleak.IgnoreCurrent()}, tg.IgnoreGoroutines...)
	t.Cleanup(func() {
		if err := goleak.Find(opts...); err != nil {
			t.Errorf("[rule close.no-leak] goroutines outlive the publisher and its setup: %v", err)
		}
	})
	s := tg.New(t)
	dest := s.Destination("close")
	requireOK(t, "close.before", tg.publish(t, s, []broker.Message{message(dest, "k", 0)}))
	if err := s.Publisher.Close(); err != nil {
		t.Errorf("[rule close.clean] Close returned %v", err)
	}
	res := tg.publish(t, s, []broker.Message{message(dest, "k", 1), message(dest, "k", 2)})
	for i, r := range res {
		if r.Err == nil {
			t.Errorf("[rule close.publish-after-close-fails] message %d published after Close", i)
		}
	}
}
