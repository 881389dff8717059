package main

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
)

// await counts the distinct events (by ce-id) published to subject and
// returns once n have arrived or timeout passed. It prints READY once
// subscribed, so a script starts the relay after it, and then one line
// with the count. A drain is timed this way, not by asking the database,
// so that the measurement puts no load on the database it measures (a
// COUNT(*) every half second slowed a PostgreSQL drain by about a quarter).
func await(nc *nats.Conn, subject string, n int, timeout time.Duration) error {
	seen := make(map[string]struct{}, n)
	done := make(chan struct{})
	msgs := make(chan *nats.Msg, 65536)
	sub, err := nc.ChanSubscribe(subject, msgs)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		return err
	}
	fmt.Println("READY")
	go func() {
		for m := range msgs {
			seen[m.Header.Get("ce-id")] = struct{}{}
			if len(seen) == n {
				close(done)
				return
			}
		}
	}()
	select {
	case <-done:
		fmt.Printf("AWAITED %d\n", n)
		return nil
	case <-time.After(timeout):
		fmt.Fprintf(os.Stderr, "probe: -await %d: timed out after %v\n", n, timeout)
		return fmt.Errorf("timed out")
	}
}
