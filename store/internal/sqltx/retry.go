package sqltx

import (
	"context"
	"time"

	"github.com/heraldhq/herald/backoff"
)

// maxAttempts bounds the retries of a transaction that lost a deadlock or a
// serialization conflict; such losses clear up once the winner commits.
const maxAttempts = 10

// conflictRetry spaces the attempts: full jitter over a window that
// doubles from 1 ms, capped at 100 ms, so that the winners finish.
var conflictRetry = backoff.Policy{Initial: time.Millisecond, Max: 100 * time.Millisecond, Jitter: backoff.JitterFull}

// Retry runs f until it succeeds, fails with an error retryable does not
// accept, ctx ends, or maxAttempts is reached. It waits a jittered, growing
// pause between attempts (conflictRetry).
func Retry(ctx context.Context, retryable func(error) bool, f func() error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = f()
		if err == nil || !retryable(err) || attempt == maxAttempts {
			return err
		}
		t := time.NewTimer(conflictRetry.Delay(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
