// Package sleep waits for a duration or a moment unless a context ends
// first: the one copy of the timer-and-select every loop with a pause needs.
package sleep

import (
	"context"
	"time"
)

// For waits d or until ctx ends, reporting whether the full time passed
// (for d <= 0: whether ctx is still live).
func For(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Until waits until t or until ctx ends, reporting whether t came.
func Until(ctx context.Context, t time.Time) bool { return For(ctx, time.Until(t)) }
