package nats_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	heraldnats "github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/internal/testenv"
)

// Rule: Tail shows the messages stored after it starts, of its subjects
// only, decoded per the message contract; older ones are not replayed.
func TestTailShowsNewMessagesOfItsSubjects(t *testing.T) {
	url := requireMachineNATS(t)
	sfx := suffix()
	stream, prefix := "HERALD_TAIL_"+sfx, "htail"+sfx
	pub := newPublisher(t, url, stream, prefix)
	deleteStream(t, url, stream)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	publish := func(dest, id string) {
		t.Helper()
		r := pub.Publish(ctx, []broker.Message{{Event: herald.Event{ID: id, Topic: "t", Type: "Gift"}, Destination: dest}})
		if r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
	}
	publish(prefix+".wallet", "before")
	var mu sync.Mutex
	var seen []string
	ready := make(chan struct{})
	done := make(chan error, 1)
	tailCtx, stop := context.WithCancel(ctx)
	go func() {
		done <- heraldnats.Tail(tailCtx, heraldnats.TailConfig{Conn: heraldnats.Config{URL: url}, Stream: stream,
			Subjects: []string{prefix + ".wallet"}}, func() { close(ready) }, func(subject string, ev herald.Event) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, subject+" "+ev.ID+" "+ev.Type)
		})
	}()
	<-ready
	publish(prefix+".room", "other-subject")
	publish(prefix+".wallet", "after")
	testenv.WaitFor(t, 10*time.Second, 10*time.Millisecond, "the tail to show a message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) > 0
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Tail: %v", err)
	}
	if want := prefix + ".wallet after Gift"; len(seen) != 1 || seen[0] != want {
		t.Fatalf("Tail showed %q, want only %q", seen, want)
	}
}
