package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// awaitStream returns once stream holds n messages more than when it was
// first asked, or timeout passed. It prints READY after that first
// answer, so a script starts the relay after it, and then one line with
// the count. A drain is timed this way, by asking the NATS server for the
// stream's count ten times a second, so that the measurement puts no load
// on what it measures: a COUNT(*) on the table every half second slowed a
// PostgreSQL drain by about a quarter, and a subscriber that received
// every message cost the server and the machine a fan-out copy of each.
func awaitStream(nc *nats.Conn, stream string, n int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	count := func() (uint64, error) {
		s, err := js.Stream(ctx, stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return 0, nil // the relay creates it when it starts
		}
		if err != nil {
			return 0, err
		}
		return s.CachedInfo().State.Msgs, nil
	}
	start, err := count()
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream, err)
	}
	fmt.Println("READY")
	for {
		got, err := count()
		if err != nil {
			return fmt.Errorf("stream %s: %w", stream, err)
		}
		if got >= start+uint64(n) {
			fmt.Printf("AWAITED %d\n", n)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stream %s: %d of %d messages after %v", stream, got-start, n, timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
