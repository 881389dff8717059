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
	info := func() (jetstream.StreamState, error) {
		s, err := js.Stream(ctx, stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return jetstream.StreamState{}, nil // the relay creates it when it starts
		}
		if err != nil {
			return jetstream.StreamState{}, err
		}
		return s.CachedInfo().State, nil
	}
	first, err := info()
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream, err)
	}
	fmt.Println("READY")
	for {
		now, err := info()
		if err != nil {
			return fmt.Errorf("stream %s: %w", stream, err)
		}
		if now.Msgs >= first.Msgs+uint64(n) {
			fmt.Printf("AWAITED %d\n", n)
			return printSpan(ctx, js, stream, first.LastSeq, n)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stream %s: %d of %d messages after %v", stream, now.Msgs-first.Msgs, n, timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// printSpan prints the drain's rate as the server stored it: n messages
// from the first after seq to the n-th, timed by the stream's own
// timestamps, so the relay's start-up is left out (as the rate from the
// first to the last delivered_at is for a polling lane) and a lane that
// keeps no delivered_at (one that deletes its rows) is timed alike.
func printSpan(ctx context.Context, js jetstream.JetStream, stream string, seq uint64, n int) error {
	if n < 2 {
		return nil // one message has no span
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	first, err := s.GetMsg(ctx, seq+1)
	if err != nil {
		return fmt.Errorf("stream %s, message %d: %w", stream, seq+1, err)
	}
	last, err := s.GetMsg(ctx, seq+uint64(n))
	if err != nil {
		return fmt.Errorf("stream %s, message %d: %w", stream, seq+uint64(n), err)
	}
	span := last.Time.Sub(first.Time).Seconds()
	if span <= 0 {
		return nil
	}
	fmt.Printf("SPAN events_per_s=%.0f\n", float64(n-1)/span)
	return nil
}
