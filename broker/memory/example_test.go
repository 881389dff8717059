package memory_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/memory"
)

// A relay test makes the broker fail, lose an ack, then recover, and
// checks what was stored.
func Example() {
	p := memory.New(memory.Config{})
	p.FailEvent("e1", 1, errors.New("broker busy")) // retryable, not stored
	p.LoseAck("e2", 1)                              // stored, reported ambiguous

	msgs := []broker.Message{
		{Destination: "room", Event: herald.Event{ID: "e1", Topic: "room", Type: "Joined", Payload: []byte(`{}`)}},
		{Destination: "room", Event: herald.Event{ID: "e2", Topic: "room", Type: "Left", Payload: []byte(`{}`)}},
	}
	for _, r := range p.Publish(context.Background(), msgs) {
		fmt.Println("error:", r.Err, "ambiguous:", herald.IsAmbiguous(r.Err))
	}
	for _, r := range p.Publish(context.Background(), msgs) { // the retry
		fmt.Println("error:", r.Err, "sequence:", r.Receipt.Sequence)
	}
	fmt.Println("e1 stored", p.Count("e1"), "times; e2 stored", p.Count("e2"), "times")
	// Output:
	// error: broker busy ambiguous: false
	// error: ambiguous: memory broker: ack lost ambiguous: true
	// error: <nil> sequence: 2
	// error: <nil> sequence: 3
	// e1 stored 1 times; e2 stored 2 times
}
