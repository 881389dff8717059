package sqltx

import (
	"context"
	"math/rand/v2"
	"time"
)

// maxAttempts bounds the retries of a transaction that lost a deadlock or a
// serialization conflict; such losses clear up once the winner commits.
const maxAttempts = 10

// Retry runs f until it succeeds, fails with an error retryable does not
// accept, ctx ends, or maxAttempts is reached. It waits a jittered, growing
// pause between attempts so that the winners of the conflict finish.
func Retry(ctx context.Context, retryable func(error) bool, f func() error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = f()
		if err == nil || !retryable(err) || attempt == maxAttempts {
			return err
		}
		// Full jitter over a window that doubles from 1 ms, capped at 100 ms.
		window := min(time.Millisecond<<(attempt-1), 100*time.Millisecond)
		wait := time.Duration(rand.Int64N(int64(window) + 1))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
