package binlog

import (
	"context"
	"testing"
	"time"
)

// Rule: past its deadline receive returns an event the dump already queued
// and otherwise returns at once: the reader does not linger after a commit.
func TestReceivePastDeadlineTakesOnlyQueued(t *testing.T) {
	st := &logStream{events: make(chan event, 1)}
	st.events <- event{}
	past := time.Now().Add(-time.Second)
	if _, ok, err := st.receive(context.Background(), past); !ok || err != nil {
		t.Fatalf("a queued event past the deadline: ok %v, %v; want it", ok, err)
	}
	done := make(chan bool, 1)
	go func() {
		_, ok, _ := st.receive(context.Background(), past)
		done <- ok
	}()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("an empty queue past the deadline gave an event")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("receive past its deadline waited for the dump")
	}
}
