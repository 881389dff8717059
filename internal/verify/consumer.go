package verify

import (
	"context"
	"os"
	"time"

	"github.com/heraldhq/herald/broker"
)

// breakEnv is a test-only hook: it makes the consumer misread on purpose,
// so that a test shows verify reports a broken guarantee and exits
// non-zero. "drop" forgets the 10th distinct event read (a loss),
// "phantom" reports reading a rolled-back event once (the first one
// rolled back before a message is read). It acts on
// verify's own consumer, never on the relay. The hooks "relay-drop"
// (relaydrop.go) and "twice" (projection.go) act on verify's own tables.
const breakEnv = "HERALD_VERIFY_TEST_BREAK"

// consume reads every message back until ctx ends, acking each.
func consume(ctx context.Context, sub broker.Subscriber, led *ledger, errs *int) {
	hook := os.Getenv(breakEnv)
	distinct, dropped, phantomDone := 0, "", false
	for ctx.Err() == nil {
		msgs, err := sub.Receive(ctx, 500)
		if err != nil {
			if ctx.Err() == nil {
				*errs++
				time.Sleep(200 * time.Millisecond)
			}
			continue
		}
		for _, m := range msgs {
			if m.Event.ID == dropped {
				_ = m.Ack(ctx)
				continue
			}
			if !led.seen(m.Event.ID) {
				distinct++
				if hook == "drop" && distinct == 10 {
					dropped = m.Event.ID
					_ = m.Ack(ctx)
					continue
				}
				if hook == "phantom" && !phantomDone {
					if id := led.aRolledBack(); id != "" {
						led.receive(id)
						phantomDone = true
					}
				}
			}
			led.receive(m.Event.ID)
			_ = m.Ack(ctx)
		}
	}
}
