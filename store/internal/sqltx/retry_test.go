package sqltx

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Rule: a conflict is retried up to maxAttempts tries, each wait within
// its full-jitter window (1 ms doubling to 100 ms); another error, or a
// success, ends it at once.
func TestRetry(t *testing.T) {
	conflict, other := errors.New("deadlock"), errors.New("syntax")
	isConflict := func(err error) bool { return errors.Is(err, conflict) }
	tries := 0
	if err := Retry(context.Background(), isConflict, func() error { tries++; return conflict }); !errors.Is(err, conflict) || tries != maxAttempts {
		t.Fatalf("a lasting conflict: %v after %d tries, want it after %d", err, tries, maxAttempts)
	}
	tries = 0
	if err := Retry(context.Background(), isConflict, func() error { tries++; return other }); !errors.Is(err, other) || tries != 1 {
		t.Fatalf("another error: %v after %d tries, want it after 1", err, tries)
	}
	for attempt, window := range map[int]time.Duration{1: time.Millisecond, 3: 4 * time.Millisecond, 8: 100 * time.Millisecond, 30: 100 * time.Millisecond} {
		for range 200 {
			if d := conflictRetry.Delay(attempt); d < 0 || d > window {
				t.Fatalf("wait after try %d: %v, outside [0, %v]", attempt, d, window)
			}
		}
	}
}
