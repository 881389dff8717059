package backoff

import "time"

// Series spaces a run of failures in a row by its Policy: Next is the wait
// after one more failure (Initial after the first), Reset starts the run
// over after a success. It is for a loop that retries one thing (a
// database that is down, a lock, an unreachable broker); a failed event
// carries its own attempt count and calls Policy.Delay. The zero Series
// of a Policy is ready. Not safe for concurrent use.
type Series struct {
	Policy
	failures int
}

// Next counts one more failure and returns the wait before the next try.
func (s *Series) Next() time.Duration {
	s.failures++
	return s.Delay(s.failures)
}

// Reset starts over: the next failure waits Initial again.
func (s *Series) Reset() { s.failures = 0 }
