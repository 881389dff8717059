package backoff

import (
	"math"
	"testing"
	"time"
)

// Rule: the wait doubles from Initial per attempt, is capped at Max even
// where doubling would overflow, and each jitter mode keeps its range.
func TestDelay(t *testing.T) {
	exact := Policy{Initial: time.Second, Max: 10 * time.Second}
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 200: 10 * time.Second} {
		if got := exact.Delay(attempt); got != want {
			t.Errorf("attempt %d: %v, want %v", attempt, got, want)
		}
	}
	huge := Policy{Initial: time.Hour, Max: math.MaxInt64}
	if d := huge.Delay(100); d <= 0 {
		t.Errorf("overflow: %v", d)
	}
	for range 1000 {
		if d := (Policy{Initial: time.Second, Max: time.Minute, Jitter: JitterFull}).Delay(3); d < 0 || d > 4*time.Second {
			t.Fatalf("full jitter out of [0, 4s]: %v", d)
		}
		if d := (Policy{Initial: time.Second, Max: time.Minute, Jitter: JitterEqual}).Delay(3); d < 2*time.Second || d > 4*time.Second {
			t.Fatalf("equal jitter out of [2s, 4s]: %v", d)
		}
	}
}

// Rule: a Series waits Initial after the first failure, doubles per
// failure in a row up to Max, and starts over at Initial after Reset.
func TestSeries(t *testing.T) {
	s := Series{Policy: Policy{Initial: 50 * time.Microsecond, Max: time.Millisecond}}
	want := []time.Duration{50 * time.Microsecond, 100 * time.Microsecond, 200 * time.Microsecond,
		400 * time.Microsecond, 800 * time.Microsecond, time.Millisecond, time.Millisecond}
	for i, w := range want {
		if got := s.Next(); got != w {
			t.Fatalf("failure %d: %v, want %v", i+1, got, w)
		}
	}
	s.Reset()
	if got := s.Next(); got != 50*time.Microsecond {
		t.Fatalf("after Reset: %v, want Initial 50µs", got)
	}
}
