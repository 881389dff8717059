package relay

import (
	"math/rand/v2"
	"time"
)

// Jitter is how a backoff is randomised.
type Jitter string

// The jitter modes. Full jitter (AWS's "full jitter") spreads retries of a
// failed burst evenly over [0, backoff); equal keeps at least half of it.
const (
	JitterFull  Jitter = "full"
	JitterEqual Jitter = "equal"
	JitterNone  Jitter = "none"
)

// Retry is a lane's retry policy.
type Retry struct {
	// Initial is the backoff after the first failure. Defaults to 5s.
	Initial time.Duration
	// Max caps the backoff. Defaults to 5m.
	Max time.Duration
	// MaxAttempts is how many tries an event gets before it goes dead.
	// Defaults to 10.
	MaxAttempts int
	// Jitter defaults to JitterFull.
	Jitter Jitter
}

func (r Retry) withDefaults() Retry {
	if r.Initial <= 0 {
		r.Initial = 5 * time.Second
	}
	if r.Max <= 0 {
		r.Max = 5 * time.Minute
	}
	if r.Max < r.Initial {
		r.Max = r.Initial
	}
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = 10
	}
	if r.Jitter == "" {
		r.Jitter = JitterFull
	}
	return r
}

// Backoff returns the wait after failed attempt number attempt (1-based):
// Initial doubled per earlier attempt, capped at Max without overflowing,
// then jittered.
func (r Retry) Backoff(attempt int) time.Duration {
	d := r.Initial
	for i := 1; i < attempt && d < r.Max; i++ {
		d *= 2 // d < Max ≤ MaxInt64/2 is not guaranteed, so check the sign
		if d <= 0 {
			d = r.Max
		}
	}
	d = min(d, r.Max)
	switch r.Jitter {
	case JitterFull:
		return rand.N(d + 1)
	case JitterEqual:
		return d/2 + rand.N(d/2+1)
	}
	return d
}
